import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommitBatch,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  type ModelProvider,
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

  it('the phase a command begins goes in the commit of the state that decided it: a tool step makes no commit of events alone', async () => {
    const steps = 4;
    const run = async (toolSteps: number) => {
      const { store, counts } = countingStore(createSqliteStore(join(directory, `p${toolSteps}.db`)));
      const scripted = scriptedModel([
        ...Array.from({ length: toolSteps }, (_, i) => callEcho(i)),
        { text: 'done' },
      ]);
      // A model that answers on a later turn of the event loop, as a real one does: events emitted when its call
      // started would be committed on their own meanwhile.
      const model: ModelProvider = {
        provider: scripted.provider,
        model: scripted.model,
        generate: async (request) => {
          for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
          return scripted.generate(request);
        },
      };
      const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
      const system = createAgentSystem({ store });
      const session = system.spawn(agent, 'go', { sessionId: `p${toolSteps}` });
      expect((await session.result).text).toBe('done');
      const phases = (await store.readEvents(`p${toolSteps}`, 0)).filter((event) => event.type === 'phase');
      await system.shutdown();
      return { ...counts, phases: phases.length };
    };
    const none = await run(0);
    const many = await run(steps);
    // Every phase is still in the session's log: two more per tool step (running the tools, calling the model).
    expect(many.phases - none.phases).toBe(2 * steps);
    expect((many.relaxed - none.relaxed) / steps, 'events-only commits per tool step').toBe(0);
  });
});

describe('commits with nothing to write', () => {
  it('a relaxed flush whose events went with an earlier commit is not passed to the store', async () => {
    for (const groupCommit of [false, true]) {
      const batches: CommitBatch[] = [];
      const inner = createSqliteStore(join(directory, `empty-${groupCommit}.db`), { groupCommit });
      const store: SessionStore = Object.create(inner) as SessionStore;
      store.commit = (sessionId: string, batch: CommitBatch) => {
        batches.push(batch);
        return inner.commit(sessionId, batch);
      };
      const model = scriptedModel([callEcho(1), callEcho(2), { text: 'done' }]);
      const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
      const system = createAgentSystem({ store });
      const session = system.spawn(agent, 'go', { sessionId: `empty-${groupCommit}` });
      expect((await session.result).text).toBe('done');
      await system.shutdown();
      const empty = batches.filter((batch) =>
        Object.entries(batch).every(([key, value]) => key === 'relaxed' || value === undefined),
      );
      expect(empty, `group commit ${groupCommit}: commits with nothing to write`).toEqual([]);
      expect(batches.length).toBeGreaterThan(3);
    }
  });
});
