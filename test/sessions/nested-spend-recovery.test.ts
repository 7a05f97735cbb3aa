import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentTool, createAgentSystem, createSqliteStore, defineAgent, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StoreCorruptError } from '../../src/persistence/store-errors.ts';
import { validateAgentCheckpoint } from '../../src/persistence/validate-stored.ts';
import { checkpoint } from '../persistence/fixtures.ts';
import { until } from '../support/until.ts';

/**
 * What an agent used as a tool spent survives a suspend and a recovery: a turn recovered mid-way reports the same
 * totals as one that never stopped, whether the sub-agent's call is answered from the journal (it finished in the
 * batch that was interrupted) or from the agent's checkpoint (an earlier batch).
 */

const usage = (input: number, output: number) => ({ input, output, cached: 0, reasoning: 0 });

/** A tool that blocks until released. */
function gate() {
  let release: (() => void) | undefined;
  let blocked = true;
  let starts = 0;
  const slow = tool({
    name: 'slow',
    description: 'takes a while',
    input: z.object({}),
    execute: async () => {
      starts += 1;
      if (blocked) await new Promise<void>((resolve) => (release = resolve));
      return 'slow done';
    },
  });
  return {
    slow,
    started: () => starts > 0,
    open: () => {
      blocked = false;
      release?.();
    },
  };
}

const lookup = tool({
  name: 'lookup',
  description: 'Looks up.',
  input: z.object({}),
  execute: () => 'found',
});

function researcher() {
  return defineAgent({
    name: 'researcher',
    description: 'Finds facts.',
    instructions: '',
    model: scriptedModel([
      { toolCalls: [{ id: 'r1', name: 'lookup', args: {} }], stopReason: 'tool_use', usage: usage(400, 40) },
      { text: 'the facts', usage: usage(400, 40) },
    ]),
    tools: [lookup],
  });
}

const askResearcher = { id: 'a1', name: 'researcher', args: { input: 'find it' } };
const callSlow = { id: 's1', name: 'slow', args: {} };

/** Lead's turns before the suspend; after it, one more answers. */
const scripts: {
  name: string;
  before: ScriptedTurn[];
  total: ReturnType<typeof usage>;
  modelCalls: number;
}[] = [
  {
    name: 'the sub-agent finished in the interrupted batch (journal)',
    before: [{ toolCalls: [askResearcher, callSlow], stopReason: 'tool_use', usage: usage(100, 10) }],
    total: usage(1000, 100),
    modelCalls: 4,
  },
  {
    name: 'the sub-agent finished in an earlier batch (checkpoint)',
    before: [
      { toolCalls: [askResearcher], stopReason: 'tool_use', usage: usage(100, 10) },
      { toolCalls: [callSlow], stopReason: 'tool_use', usage: usage(100, 10) },
    ],
    total: usage(1100, 110),
    modelCalls: 5,
  },
];

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-nested-spend-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('nested spend across a suspend and recovery', () => {
  it.each(scripts)('$name: the recovered turn reports what one that never stopped does', async (script) => {
    const answer: ScriptedTurn = { text: 'finished', usage: usage(100, 10) };
    const lead = (turns: ScriptedTurn[], slow: ReturnType<typeof gate>['slow']) =>
      defineAgent({
        name: 'lead',
        instructions: '',
        model: scriptedModel(turns),
        tools: [agentTool(researcher()), slow],
      });

    // The same turn, never stopped.
    const straight = gate();
    straight.open();
    const reference = createAgentSystem();
    const expected = await reference.spawn(lead([...script.before, answer], straight.slow), 'work').result;
    await reference.shutdown();
    expect(expected.usage).toEqual(script.total);
    expect(expected.modelCalls).toBe(script.modelCalls);

    const path = join(directory, 'sessions.db');
    const first = gate();
    const system = createAgentSystem({ store: createSqliteStore(path) });
    const session = system.spawn(lead(script.before, first.slow), 'work', { sessionId: 'n-1' });
    await until(first.started);
    await system.shutdown();
    expect(await session.result).toMatchObject({ stopReason: 'suspended' });

    const second = gate();
    second.open();
    const recovering = createAgentSystem({
      store: createSqliteStore(path),
      agents: [lead([answer], second.slow)],
    });
    const { sessions } = await recovering.recover();
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    await recovering.shutdown();
    expect(result).toMatchObject({ status: 'completed', text: 'finished' });
    expect(result.usage).toEqual(expected.usage);
    expect(result.modelCalls).toBe(expected.modelCalls);
  });
});

describe("a stored checkpoint's nested spend", () => {
  it('is optional (a checkpoint without it resumes with none) and checked when present', () => {
    const stored = checkpoint();
    expect(() => validateAgentCheckpoint('s1', stored)).not.toThrow();
    const withNested = {
      ...stored,
      usage: { ...stored.usage, nested: { usage: usage(8, 1), modelCalls: 2 } },
    };
    expect(() => validateAgentCheckpoint('s1', withNested)).not.toThrow();
    const damaged = { ...stored, usage: { ...stored.usage, nested: { usage: usage(8, 1), modelCalls: -1 } } };
    expect(() => validateAgentCheckpoint('s1', damaged)).toThrow(StoreCorruptError);
  });
});
