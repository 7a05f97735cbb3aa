import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import type { StoredSession } from '../../src/persistence/store.ts';
import { StoreCommitError } from '../../src/persistence/store-errors.ts';
import { sessionRow, transcript } from './fixtures.ts';

/**
 * A SQLite store keeps each session's conversation as rows of its own and writes, with each commit, only the
 * messages that are new since its last commit of the session; whatever the conversation becomes (longer, shorter,
 * rewritten), loading gives back exactly what was committed last.
 */
let directory: string;
let file: string;
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-messages-'));
  file = join(directory, 'store.db');
});
afterEach(() => rmSync(directory, { recursive: true, force: true }));

const say = (text: string): Message => ({ role: 'user', content: text });

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
  it('writes only the messages a commit adds; a conversation that grows, shrinks or is rewritten loads as committed', () => {
    const store = createSqliteStore(file);
    recordInserts();
    try {
      const conversation = [...transcript];
      store.commit('s1', { session: running(conversation) });
      expect(inserted()).toEqual([0, 1, 2, 3, 4]);

      // Two more messages: the five stored rows stay as they are, two are appended.
      const grown = [...conversation, say('six'), say('seven')];
      store.commit('s1', { session: running(grown, 2_000) });
      expect(inserted()).toEqual([5, 6]);
      expect(messageRows()).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(store.load('s1')?.session).toEqual(running(grown, 2_000));

      // Loading forgets what the store wrote (the session may resume elsewhere): the next commit writes it whole.
      const more = [...grown, say('eight')];
      store.commit('s1', { session: running(more, 2_500) });
      expect(inserted()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      store.commit('s1', { session: running(more, 2_600) });
      expect(inserted()).toEqual([]);

      // Shorter (a turn rolled back): the rows after it go.
      const shrunk = grown.slice(0, 2);
      store.commit('s1', { session: running(shrunk, 3_000) });
      expect(inserted()).toEqual([]);
      expect(messageRows()).toEqual([0, 1]);
      expect(store.load('s1')?.session).toEqual(running(shrunk, 3_000));

      // Rewritten in the middle (compaction): the rows from the first changed message on are written again.
      const compacted = [shrunk[0] as Message, say('a summary of what came before'), say('next')];
      store.commit('s1', { session: running(compacted, 4_000) });
      store.commit('s1', { session: running([...compacted.slice(0, 2), say('other')], 4_500) });
      expect(inserted()).toEqual([0, 1, 2, 2]);
      expect(store.load('s1')?.session).toEqual(running([...compacted.slice(0, 2), say('other')], 4_500));

      // Emptied, then a session mid-turn (four lists sharing their messages).
      store.commit('s1', { session: running([], 5_000) });
      expect(messageRows()).toEqual([]);
      expect(store.load('s1')?.session).toEqual(running([], 5_000));
      const midTurn = sessionRow('s1');
      store.commit('s1', { session: midTurn });
      expect(store.load('s1')?.session).toEqual(midTurn);
      // A commit without a session row leaves the conversation as it is.
      store.commit('s1', { journal: [['k', 1]] });
      expect(store.load('s1')?.session).toEqual(midTurn);
      // A session that stops running here is forgotten (the store keeps the conversations of running sessions
      // only): its next turn writes the conversation once, then what is new.
      inserted();
      const finished = sessionRow('s1', { status: 'idle', turn: null, queued: [], updatedAt: 5_500 });
      store.commit('s1', { session: finished });
      store.commit('s1', { session: { ...finished, status: 'running', updatedAt: 5_600 } });
      store.commit('s1', { session: { ...finished, status: 'running', updatedAt: 5_700 } });
      // (The load above forgot it already: the idle row is written whole, and so is the next turn's first commit.)
      expect(inserted()).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
    } finally {
      store.close();
    }
    inserted();
    // Another store on the file (a process resuming the session) knows nothing of it: it writes the whole
    // conversation once, then only what is new.
    const again = createSqliteStore(file);
    try {
      const next = [...transcript, say('after a restart')];
      again.commit('s1', { session: running(next, 6_000) });
      expect(inserted()).toEqual([0, 1, 2, 3, 4, 5]);
      again.commit('s1', { session: running([...next, say('and then')], 7_000) });
      expect(inserted()).toEqual([6]);
      expect(again.load('s1')?.session).toEqual(running([...next, say('and then')], 7_000));
    } finally {
      again.close();
    }
  });

  it('refuses a commit made against a conversation that is not the stored one, writes nothing, and writes the next one whole', () => {
    const mine = createSqliteStore(file);
    const other = createSqliteStore(file);
    const refusal = (run: () => void): StoreCommitError => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(StoreCommitError);
        return error as StoreCommitError;
      }
      throw new Error('the commit was not refused');
    };
    try {
      const [a, b, c, d] = [say('a'), say('b'), say('c'), say('d')];
      mine.commit('s1', { session: running([a, b, c]) });
      // The same count of messages, other ones: only the chain of checksums in the head tells.
      const theirs = running([a, say('x'), say('y')], 2_000);
      other.commit('s1', { session: theirs });
      const error = refusal(() => mine.commit('s1', { session: running([a, b, c, d], 3_000) }));
      expect(error.reason).toBe('message_sequence');
      expect(other.load('s1')?.session).toEqual(theirs);
      // Refused once: the store forgot what it knew of the session, and writes its conversation whole.
      mine.commit('s1', { session: running([a, b, c, d], 3_000) });
      expect(other.load('s1')?.session).toEqual(running([a, b, c, d], 3_000));

      // More messages stored than the commit keeps: the kept one's checksum is read from its row.
      const longer = running([a, say('p'), say('q'), say('r'), say('s')], 4_000);
      other.commit('s1', { session: longer });
      const shorter = refusal(() => mine.commit('s1', { session: running([a, b, c, d, say('e')], 5_000) }));
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
          conversation = [...conversation, say(`message ${turn}`)];
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
