import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import type { StoredSession } from '../../src/persistence/store.ts';
import { StoreCommitError } from '../../src/persistence/store-errors.ts';
import { tailLimit } from '../../src/persistence/stored-format/stored-messages.ts';
import { commitRefusal } from '../support/commit-refusal.ts';
import { sessionRow, transcript } from './fixtures.ts';

/**
 * A SQLite store keeps a session's last messages in its session row, up to `tailLimit` characters, and the ones
 * before in rows of their own, written once: a commit writes only the rows that are new since its last commit of the
 * session. Whatever the conversation becomes (longer, shorter, rewritten), loading gives back exactly what was
 * committed last.
 */
let directory: string;
let file: string;
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-messages-'));
  file = join(directory, 'store.db');
});
afterEach(() => rmSync(directory, { recursive: true, force: true }));

const say = (text: string): Message => ({ role: 'user', content: text });
/** A message of a third of the tail's limit: two of them stay in the row, three pass the limit. */
const big = (text: string): Message => say(`${text} ${'x'.repeat(Math.ceil(tailLimit / 3))}`);

/** A session in its first turn whose conversation is `messages`, as the turn's agent holds it. */
const running = (messages: Message[], updatedAt = 1_000): StoredSession => {
  const row = sessionRow('s1', { turns: 0, transcript: [], updatedAt });
  const turn = row.turn as NonNullable<StoredSession['turn']>;
  const agent = turn.agent as NonNullable<typeof turn.agent>;
  return {
    ...row,
    turn: {
      ...turn,
      number: 1,
      session: {
        ...turn.session,
        transcript: messages,
        agentHistory: messages,
        turnStart: 0,
        agentBase: 0,
        turns: 0,
      },
      agent: {
        ...agent,
        checkpoint: {
          ...agent.checkpoint,
          history: messages,
          openCalls: [],
          decision: null,
          approvals: null,
        },
      },
    },
  };
};

/** The stored message rows of a session, by idx. */
function messageRows(sessionId = 's1'): number[] {
  const db = new DatabaseSync(file);
  try {
    return db
      .prepare('SELECT idx FROM messages WHERE session_id = ? ORDER BY idx')
      .all(sessionId)
      .map((row) => Number(row.idx));
  } finally {
    db.close();
  }
}

/** Records every message row the store inserts from now on (a trigger on the file). */
function recordInserts(): void {
  const db = new DatabaseSync(file);
  db.exec(`CREATE TABLE inserted (idx INTEGER NOT NULL);
    CREATE TRIGGER record_inserts AFTER INSERT ON messages BEGIN INSERT INTO inserted VALUES (new.idx); END;`);
  db.close();
}

/** The idx of the message rows inserted since the last call. */
function inserted(): number[] {
  const db = new DatabaseSync(file);
  try {
    const rows = db.prepare('SELECT idx FROM inserted ORDER BY rowid').all();
    db.exec('DELETE FROM inserted');
    return rows.map((row) => Number(row.idx));
  } finally {
    db.close();
  }
}

describe('the conversation written as what changed', () => {
  it('keeps a short conversation in the row, moves a long one into rows once, and loads every change as committed', () => {
    const store = createSqliteStore(file);
    // Loading forgets what a store knows of a session: the loads go through another store.
    const reader = createSqliteStore(file);
    recordInserts();
    const check = (session: StoredSession) => expect(reader.load('s1')?.session).toEqual(session);
    try {
      const [a, b, c] = [say('a'), say('b'), say('c')];
      const [b1, b2, b3, b4, b5, b6] = [big('1'), big('2'), big('3'), big('4'), big('5'), big('6')];
      store.commit('s1', { session: running([a, b]) });
      store.commit('s1', { session: running([a, b, b1, b2]) });
      expect(inserted()).toEqual([]);
      check(running([a, b, b1, b2]));

      // Past the limit: the row's messages move into rows, once.
      const long = [a, b, b1, b2, b3];
      store.commit('s1', { session: running(long, 2_000) });
      expect(inserted()).toEqual([0, 1, 2, 3, 4]);
      store.commit('s1', { session: running([...long, c], 2_100) });
      expect(inserted()).toEqual([]);
      check(running([...long, c], 2_100));
      store.commit('s1', { session: running([...long, c, b4, b5, b6], 2_200) });
      expect(inserted()).toEqual([5, 6, 7, 8]);
      expect(messageRows()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      check(running([...long, c, b4, b5, b6], 2_200));

      // Shorter (a turn rolled back): the rows after it go.
      store.commit('s1', { session: running([a, b, b1], 3_000) });
      expect(messageRows()).toEqual([0, 1, 2]);
      check(running([a, b, b1], 3_000));

      // Rewritten in the middle (compaction): the rows from the first changed message on go.
      const compacted = [a, say('a summary of what came before'), say('next')];
      store.commit('s1', { session: running(compacted, 4_000) });
      expect(messageRows()).toEqual([0]);
      check(running(compacted, 4_000));

      // Emptied, then a session mid-turn (four lists sharing their messages).
      store.commit('s1', { session: running([], 5_000) });
      expect(messageRows()).toEqual([]);
      check(running([], 5_000));
      const midTurn = sessionRow('s1');
      store.commit('s1', { session: midTurn });
      check(midTurn);
      // A commit without a session row leaves the conversation as it is.
      store.commit('s1', { journal: [['k', 1]] });
      check(midTurn);
      expect(inserted()).toEqual([]);

      // A session that stops running here is forgotten (the store keeps the conversations of running sessions
      // only): its next turn writes the conversation once, then what is new.
      store.commit('s1', {
        session: { ...running(long, 5_500), status: 'idle', turn: null, transcript: long },
      });
      store.commit('s1', { session: running(long, 5_600) });
      store.commit('s1', { session: running(long, 5_700) });
      expect(inserted()).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
      check(running(long, 5_700));
    } finally {
      store.close();
      reader.close();
    }
    // Another store on the file (a process resuming the session) knows nothing of it: it writes the whole
    // conversation once, then only what is new.
    const again = createSqliteStore(file);
    try {
      const next = [say('a'), big('1'), big('2'), big('3')];
      again.commit('s1', { session: running(next, 6_000) });
      expect(inserted()).toEqual([0, 1, 2, 3]);
      again.commit('s1', { session: running([...next, say('and then')], 7_000) });
      expect(inserted()).toEqual([]);
      expect(again.load('s1')?.session).toEqual(running([...next, say('and then')], 7_000));
    } finally {
      again.close();
    }
  });

  it('refuses a commit made against a conversation that is not the stored one, writes nothing, and writes the next one whole', () => {
    const mine = createSqliteStore(file);
    const other = createSqliteStore(file);
    try {
      const a = say('a');
      const mineFirst = [a, big('b1'), big('b2'), big('b3')];
      mine.commit('s1', { session: running(mineFirst) });
      // The same count of messages in rows, other ones: only the chain of checksums in the head tells.
      const theirs = running([a, big('x1'), big('x2'), big('x3')], 2_000);
      other.commit('s1', { session: theirs });
      const error = commitRefusal(() =>
        mine.commit('s1', { session: running([...mineFirst, say('d')], 3_000) }),
      );
      expect(error.reason).toBe('message_sequence');
      expect(other.load('s1')?.session).toEqual(theirs);
      // Refused once: the store forgot what it knew of the session, and writes its conversation whole.
      const mineNext = [...mineFirst, say('d')];
      mine.commit('s1', { session: running(mineNext, 3_000) });
      expect(other.load('s1')?.session).toEqual(running(mineNext, 3_000));

      // More messages in rows than the commit keeps: the kept one's checksum is read from its row.
      const longer = running([a, big('p1'), big('p2'), big('p3'), big('p4'), big('p5')], 4_000);
      other.commit('s1', { session: longer });
      const shorter = commitRefusal(() =>
        mine.commit('s1', { session: running([...mineNext, say('e')], 5_000) }),
      );
      expect(shorter.reason).toBe('message_sequence');
      expect(mine.load('s1')?.session).toEqual(longer);
    } finally {
      mine.close();
      other.close();
    }
  });

  it('loads every conversation as committed with group commit, on the event loop and on a writer thread', async () => {
    for (const writer of ['inline', 'thread'] as const) {
      const store = createSqliteStore(join(directory, `${writer}.db`), { groupCommit: { writer } });
      try {
        let conversation = [...transcript];
        const commits: Promise<void>[] = [];
        for (let turn = 0; turn < 5; turn++) {
          conversation = [...conversation, turn % 2 === 0 ? big(`message ${turn}`) : say(`message ${turn}`)];
          commits.push(store.commit('s1', { session: running(conversation, 1_000 + turn) }));
        }
        // A commit refused by the rules fails alone; the session's next commit writes its conversation whole.
        const refused = store.commit('s1', { session: { ...running(conversation), turns: -1 } });
        await expect(refused).rejects.toBeInstanceOf(StoreCommitError);
        await Promise.all(commits);
        conversation = [...conversation.slice(0, 2), say('rewritten')];
        await store.commit('s1', { session: running(conversation, 2_000) });
        expect(store.load('s1')?.session).toEqual(running(conversation, 2_000));
      } finally {
        store.close();
      }
    }
  });
});
