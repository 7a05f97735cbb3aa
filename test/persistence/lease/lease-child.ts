/**
 * The child process of session-lease-processes.test.ts: one process of a rolling deploy, on a shared SQLite file.
 *
 * - `run`: spawns session "leased", whose agent calls the tool `slow` once; prints `tool-started <pid>` when the tool
 *   starts, finishes the tool when the line `release` comes on stdin, then prints the turn's result and exits.
 * - `restore`: restores session "leased" and prints `restore <error name>` (`restore ok` when it was resumed).
 * - `recover`: recovers the interrupted sessions (`takeOver` as planned) and prints what recover() gave; each session
 *   it resumes runs `slow` as above (prints `tool-started`, waits for `release`), then its result is printed.
 *   node --import tsx test/persistence/lease/lease-child.ts   (the plan comes in TROUPE_LEASE_PLAN, as JSON)
 */

import { createInterface } from 'node:readline';
import { z } from 'zod';
import {
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  SessionLeasedError,
  tool,
} from '../../../src/index.ts';
import { scriptedModel } from '../../../src/testing/index.ts';
import { writeLine } from '../../support/write-line.ts';

export interface LeasePlan {
  store: string;
  mode: 'run' | 'recover' | 'restore';
  takeOver?: boolean;
}

export interface RecoverReport {
  recovered: string[];
  failures: { sessionId: string; name: string; holderPid: number | null; message: string }[];
}

export interface ResultReport {
  status: string;
  stopReason: string;
  error: { name: string; message: string } | null;
}

const plan = JSON.parse(process.env.TROUPE_LEASE_PLAN ?? 'null') as LeasePlan;
const say = writeLine;

let release: (() => void) | undefined;
let released = false;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'release') return;
  released = true;
  release?.();
});

const slow = tool({
  name: 'slow',
  description: 'takes until the parent says release',
  input: z.object({}),
  execute: async () => {
    say(`tool-started ${process.pid}`);
    if (!released) await new Promise<void>((resolve) => (release = resolve));
    return 'slow done';
  },
});

const agent = defineAgent({
  name: 'worker',
  instructions: 'work',
  model: scriptedModel([
    { toolCalls: [{ id: 'c1', name: 'slow', args: {} }], stopReason: 'tool_use' },
    { text: 'finished' },
  ]),
  tools: [slow],
});

async function main(): Promise<void> {
  const store = createSqliteStore(plan.store);
  const system = createAgentSystem({ store, agents: [agent] });
  if (plan.mode === 'restore') {
    try {
      await system.restore('leased', agent);
      say('restore ok');
    } catch (error) {
      say(`restore ${error instanceof Error ? error.name : String(error)}`);
    }
    await system.shutdown();
    store.close();
    process.exit(0);
  }
  const sessions =
    plan.mode === 'run'
      ? [system.spawn(agent, 'go', { sessionId: 'leased' })]
      : await (async () => {
          const recovered = await system.recover({ takeOver: plan.takeOver === true });
          const report: RecoverReport = {
            recovered: recovered.sessions.map((session) => session.sessionId),
            failures: recovered.failures.map(({ sessionId, error }) => ({
              sessionId,
              name: error.name,
              holderPid: error instanceof SessionLeasedError ? error.holder.pid : null,
              message: error.message,
            })),
          };
          say(`recover ${JSON.stringify(report)}`);
          return recovered.sessions;
        })();
  for (const session of sessions) {
    const result = await session.result;
    const report: ResultReport = {
      status: result.status,
      stopReason: result.stopReason,
      error: result.error ? { name: result.error.name, message: result.error.message } : null,
    };
    say(`result ${JSON.stringify(report)}`);
  }
  await system.shutdown();
  store.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  say(`crashed ${String(error)}`);
  process.exit(1);
});
