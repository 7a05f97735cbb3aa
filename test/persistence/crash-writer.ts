/**
 * The child process of crash.test.ts: commits batches to a SQLite store in a loop until it is killed (by the test,
 * or by itself after `selfKillAfter` commits). Batch N writes the session row with `turns` N, nested-run and journal
 * entries that say N, one approval, and (N % 3) + 1 events, so a reader can tell whether every batch is whole.
 *   node --import tsx test/persistence/crash-writer.ts <file> <full|normal> <selfKillAfter, 0 for never>
 */
import { writeSync } from 'node:fs';
import type { RunEvent } from '../../src/core/events.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { approval, checkpoint, sessionRow } from './fixtures.ts';

export const crashSession = 'crash';

/** Events batch N appends. */
export function eventsInBatch(batch: number): number {
  return (batch % 3) + 1;
}

/** A payload big enough that a batch spans several database pages. */
export function filler(batch: number): string {
  return `${batch}:`.padEnd(1_000 + (batch % 7) * 900, String.fromCharCode(97 + (batch % 26)));
}

function main(): void {
  const [file, synchronous, selfKillAfter] = process.argv.slice(2);
  if (file === undefined || (synchronous !== 'full' && synchronous !== 'normal')) {
    throw new Error('usage: crash-writer.ts <file> <full|normal> <selfKillAfter>');
  }
  const store = createSqliteStore(file, { synchronous });
  const state = store.load(crashSession);
  let batch = state?.session.turns ?? 0;
  let nextSeq = (state?.lastSeq ?? -1) + 1;
  const killAfter = Number(selfKillAfter ?? 0);
  writeSync(1, 'ready\n');
  for (let done = 1; ; done++) {
    batch++;
    const events: RunEvent[] = Array.from({ length: eventsInBatch(batch) }, (_, index) => ({
      time: batch,
      agent: 'writer',
      sessionId: crashSession,
      seq: nextSeq + index,
      route: 'crash',
      depth: 0,
      type: 'delta',
      data: { content: `${batch}/${index}` },
    }));
    store.commit(crashSession, {
      session: sessionRow(crashSession, { turns: batch, updatedAt: batch }),
      runs: [['nested', checkpoint({ step: batch })]],
      journal: [
        ['batch', batch],
        [`filler:${batch}`, filler(batch)],
      ],
      events,
      approvals: [approval(crashSession, `call_${batch}`)],
    });
    nextSeq += events.length;
    // Written after commit returned: whatever the parent reads here must survive the kill.
    writeSync(1, `committed ${batch}\n`);
    if (done === killAfter) process.kill(process.pid, 'SIGKILL');
  }
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replaceAll('\\', '/'))) main();
