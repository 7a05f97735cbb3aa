/**
 * The child process of crash.test.ts: commits batches to a SQLite store in a loop until it is killed (by the test,
 * or by itself after `selfKillAfter` commits). Batch N writes the session row with `turns` N, nested-run and journal
 * entries that say N, one approval, and (N % 3) + 1 events, so a reader can tell whether every batch is whole.
 * With `group`, the store runs with group commit and four sessions commit at once (their commits share groups);
 * `group-thread` is the same with the groups written by the store's writer thread.
 *   node --import tsx test/persistence/crash-writer.ts <file> <full|normal> <selfKillAfter, 0 for never> <single|group|group-thread>
 */

import type { RunEvent } from '../../src/core/events.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { writeLine } from '../support/write-line.ts';
import { approval, checkpoint, sessionRow } from './fixtures.ts';

export const crashSession = 'crash';
/** The sessions the writer commits to with group commit. */
export const groupSessions: readonly string[] = [crashSession, 'crash-1', 'crash-2', 'crash-3'];

/** Events batch N appends. */
export function eventsInBatch(batch: number): number {
  return (batch % 3) + 1;
}

/** A payload big enough that a batch spans several database pages. */
export function filler(batch: number): string {
  return `${batch}:`.padEnd(1_000 + (batch % 7) * 900, String.fromCharCode(97 + (batch % 26)));
}

async function main(): Promise<void> {
  const [file, synchronous, selfKillAfter, mode = 'single'] = process.argv.slice(2);
  if (
    file === undefined ||
    (synchronous !== 'full' && synchronous !== 'normal') ||
    (mode !== 'single' && mode !== 'group' && mode !== 'group-thread')
  ) {
    throw new Error(
      'usage: crash-writer.ts <file> <full|normal> <selfKillAfter> <single|group|group-thread>',
    );
  }
  const store = createSqliteStore(file, {
    synchronous,
    groupCommit: mode === 'single' ? false : { writer: mode === 'group' ? 'inline' : 'thread' },
  });
  const sessions = mode === 'single' ? [crashSession] : groupSessions;
  const killAfter = Number(selfKillAfter ?? 0);
  const starts = sessions.map((sessionId) => {
    const state = store.load(sessionId);
    return { sessionId, batch: state?.session.turns ?? 0, nextSeq: (state?.lastSeq ?? -1) + 1 };
  });
  let done = 0;
  writeLine('ready');
  await Promise.all(
    starts.map(async (start) => {
      const { sessionId } = start;
      let { batch, nextSeq } = start;
      for (;;) {
        batch++;
        const events: RunEvent[] = Array.from({ length: eventsInBatch(batch) }, (_, index) => ({
          time: batch,
          agent: 'writer',
          sessionId,
          seq: nextSeq + index,
          route: 'crash',
          depth: 0,
          type: 'delta',
          data: { content: `${batch}/${index}` },
        }));
        await store.commit(sessionId, {
          session: sessionRow(sessionId, { turns: batch, updatedAt: batch }),
          runs: [['nested', checkpoint({ step: batch })]],
          journal: [
            ['batch', batch],
            [`filler:${batch}`, filler(batch)],
          ],
          events,
          approvals: [approval(sessionId, `call_${batch}`)],
        });
        nextSeq += events.length;
        // Written once the commit is done: whatever the parent reads here must survive the kill.
        writeLine(`committed ${sessionId} ${batch}`);
        done++;
        if (done === killAfter) process.kill(process.pid, 'SIGKILL');
      }
    }),
  );
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replaceAll('\\', '/')))
  void main();
