import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommitBatch,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  type SessionStore,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A store that counts the commits it passes on: the durable ones (fsync on a FULL store) and the relaxed ones. */
function countingStore(inner: SessionStore) {
  const counts = { durable: 0, relaxed: 0 };
  const store: SessionStore = Object.create(inner) as SessionStore;
  store.commit = (sessionId: string, batch: CommitBatch) => {
    if (batch.relaxed === true) counts.relaxed++;
    else counts.durable++;
    return inner.commit(sessionId, batch);
  };
  return { store, counts };
}

const echo = tool({
  name: 'echo',
  description: 'echoes',
  input: z.object({ n: z.number() }),
  execute: async ({ n }) => `echo ${n}`,
});

const callEcho = (n: number): ScriptedTurn => ({
  toolCalls: [{ id: `e${n}`, name: 'echo', args: { n } }],
  stopReason: 'tool_use',
});

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-commits-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('commits of a durable tool step', () => {
  it('a tool step (model call, tool call) costs at most 2 commits on a SQLite store', async () => {
    const steps = 6;
    const run = async (toolSteps: number) => {
      const { store, counts } = countingStore(createSqliteStore(join(directory, `s${toolSteps}.db`)));
      const model = scriptedModel([
        ...Array.from({ length: toolSteps }, (_, i) => callEcho(i)),
        { text: 'done' },
      ]);
      const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
      const system = createAgentSystem({ store });
      const result = await system.spawn(agent, 'go', { sessionId: `s${toolSteps}` }).result;
      expect(result.text).toBe('done');
      await system.shutdown();
      return counts;
    };
    const none = await run(0);
    const many = await run(steps);
    const perStep = (many.durable + many.relaxed - none.durable - none.relaxed) / steps;
    expect(perStep, `commits per tool step: ${perStep}`).toBeLessThanOrEqual(2);
  });
});
