import { describe, expect, it } from 'vitest';
import {
  appendCommitRows,
  type CommitRowsWire,
  readCommitRows,
} from '../../src/persistence/commit-rows-wire.ts';
import { type CommitRows, commitRowsOf } from '../../src/persistence/sqlite-store.ts';
import { createMessageLog } from '../../src/persistence/stored-format/stored-messages.ts';
import { approval, checkpoint, events, idleRow, sessionRow } from './fixtures.ts';

describe("the writer thread's wire of a group of commits", () => {
  it('reads back every commit of a group as it was written, whatever parts each commit has', () => {
    const log = createMessageLog();
    // Long enough that the commit writes rows of the messages table, not only the session row's tail.
    const long = Array.from({ length: 12 }, (_, index) => ({
      role: 'user' as const,
      content: `${index} ${'x'.repeat(400)}`,
    }));
    const decided = { ...approval('b', 'call_9'), status: 'approved' as const, decidedAt: 1_700_000_000_500 };
    const group: CommitRows[] = [
      commitRowsOf(
        'a',
        {
          session: sessionRow('a', { transcript: long }),
          runs: [['root', checkpoint()]],
          events: events('a', 0, 3),
        },
        log,
      ),
      commitRowsOf('a', {
        journal: [
          ['k', { n: 1 }],
          ['l', [1, 'two']],
        ],
        events: events('a', 3, 1),
        relaxed: true,
      }),
      commitRowsOf('b', { approvals: [approval('b', 'call_2'), decided] }),
      commitRowsOf('a', { session: idleRow('a'), runs: [['nested', null]], clearTurn: true }, log),
      // Values the rules refuse still cross the wire as they are, to be refused by the thread.
      { ...commitRowsOf('c', {}), sessionId: 'c', events: [{ seq: 'x', time: 1n, agent: null, type: {} }] },
    ];
    const wire: CommitRowsWire = [];
    for (const rows of group) appendCommitRows(wire, rows);
    // A copy, as the thread receives it.
    const received = structuredClone(wire);
    expect(readCommitRows(received, group.length)).toEqual(group);
    expect(group[0]?.messages?.docs.length).toBeGreaterThan(0);
  });

  it('holds only strings, numbers and such: no object or list per commit', () => {
    const wire: CommitRowsWire = [];
    appendCommitRows(wire, commitRowsOf('a', { session: sessionRow('a'), events: events('a', 0, 2) }));
    for (const value of wire) expect(typeof value === 'object' && value !== null).toBe(false);
  });
});
