/**
 * What a W2 commit's session row is made of, and what making it costs: the commits of N W2 sessions (captured on the
 * memory store, as commit-replay.ts does) are turned into the SQLite store's rows by this tree's source.
 *
 * Prints, for the first session, commit by commit: the session row's JSON text (`doc`), its parts (the row without
 * its messages, `row`; the messages the row holds itself, `tail`; how many messages are in rows of the messages
 * table), and the commit's events and journal texts. Then µs of CPU per commit (median of the repetitions after
 * two warm-up passes) of each piece of `commitRowsOf`: the row's encoding (message lists as ranges), its
 * `JSON.stringify`, the message log (the new messages' JSON, the tail), the events' JSON, and all of `commitRowsOf`.
 *
 *   node bench/persistence/session-doc-split.ts [sessions=5000] [repetitions=5]
 *
 * TROUPE_BENCH_STEPS=<n> makes each turn n tool steps instead of W2's 3 (a longer conversation).
 */

import { commitRowsOf } from '../../src/persistence/sqlite-store.ts';
import type { CommitBatch } from '../../src/persistence/store.ts';
import { encodeSessionDoc } from '../../src/persistence/stored-format/session-doc.ts';
import { createMessageLog } from '../../src/persistence/stored-format/stored-messages.ts';
import { captureCommits, median } from '../system/durable-workload.ts';

const sessions = Number(process.argv[2] ?? 5000);
const repetitions = Number(process.argv[3] ?? 5);
const steps = Number(process.env.TROUPE_BENCH_STEPS ?? 3);
const commits = await captureCommits(sessions, steps);

const first = commits[0]?.[0];
const log = createMessageLog();
let index = 0;
console.log(`the commits of session ${first} (${steps} tool steps), characters of JSON:`);
for (const [sessionId, batch] of commits) {
  if (sessionId !== first) continue;
  const rows = commitRowsOf(sessionId, batch, log);
  const doc = rows.session?.doc ?? '';
  const parsed =
    doc === '' ? undefined : (JSON.parse(doc) as { row: unknown; tail: unknown[]; messages: number });
  console.log(
    `commit ${index++}: doc ${doc.length}, row ${parsed === undefined ? 0 : JSON.stringify(parsed.row).length}, ` +
      `tail ${parsed === undefined ? 0 : JSON.stringify(parsed.tail).length} (${parsed?.tail.length ?? 0} messages), ` +
      `messages in rows ${parsed?.messages ?? 0}, events ${rows.eventsDoc.length}, ` +
      `journal ${rows.journal.map((entry) => (entry[1] as string).length).join('+') || 0}`,
  );
}

const withRows = commits.filter((entry): entry is [string, CommitBatch & { session: object }] =>
  Boolean(entry[1].session),
);
const encoded = withRows.map(([, batch]) => encodeSessionDoc(batch.session as never));
const timed = (name: string, run: () => void): void => {
  const figures: number[] = [];
  for (let repetition = 0; repetition < repetitions + 2; repetition++) {
    const start = process.cpuUsage();
    run();
    const spent = process.cpuUsage(start);
    if (repetition >= 2) figures.push((spent.user + spent.system) / commits.length);
  }
  console.log(`${name.padEnd(36)} ${median(figures).toFixed(2)} µs per commit`);
};
console.log(`\n${commits.length} commits of ${sessions} sessions; µs of CPU per commit (all commits):`);
timed('commitRowsOf, in all', () => {
  const fresh = createMessageLog();
  for (const [sessionId, batch] of commits) commitRowsOf(sessionId, batch, fresh);
});
timed('the row encoded (ranges)', () => {
  for (const [, batch] of withRows) encodeSessionDoc(batch.session as never);
});
timed('the row stringified', () => {
  for (const entry of encoded) JSON.stringify(entry.row);
});
timed('the message log (new JSON, tail)', () => {
  const fresh = createMessageLog();
  for (let at = 0; at < withRows.length; at++)
    fresh.write(
      (withRows[at] as [string, unknown])[0],
      (encoded[at] as { messages: never[] }).messages,
      (message) => JSON.stringify(message),
    );
});
timed('the events stringified', () => {
  for (const [, batch] of commits)
    if (batch.events !== undefined)
      JSON.stringify(
        batch.events.map((event) => [
          event.time,
          event.agent,
          event.route,
          event.depth,
          event.type,
          null,
          event.data,
        ]),
      );
});
