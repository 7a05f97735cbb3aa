import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  type GuardrailOptions,
  validateHistory,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../support/until.ts';

/** A durable session interrupted while a guardrail checks resumes by checking again; finished calls are not redone. */

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-guardrails-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A check that never answers (until the run ends): the session is interrupted while it runs. */
function hanging(name: string, started: string[]): GuardrailOptions {
  return {
    name,
    check: (_value, info) => {
      started.push(info.text);
      return new Promise((_resolve, reject) =>
        info.signal.addEventListener('abort', () => reject(info.signal.reason)),
      );
    },
  };
}

function counting(name: string, seen: string[], decision: 'allow' | 'block'): GuardrailOptions {
  return {
    name,
    check: (_value, info) => {
      seen.push(info.text);
      return { decision, message: 'second look' };
    },
  };
}

describe('guardrail checks in durable sessions', () => {
  it('suspended while checking the output: recover() checks the answer again without calling the model again', async () => {
    const path = join(directory, 'sessions.db');
    const started: string[] = [];
    const firstModel = scriptedModel([{ text: 'the answer' }]);
    const first = createAgentSystem({ store: createSqliteStore(path) });
    const session = first.spawn(
      defineAgent({
        name: 'worker',
        instructions: '',
        model: firstModel,
        guardrails: { output: [hanging('out', started)] },
      }),
      'question',
      { sessionId: 'g-1' },
    );
    await until(() => started.length === 1);
    await first.shutdown();
    expect(await session.result).toMatchObject({ stopReason: 'suspended' });

    const seen: string[] = [];
    const secondModel = scriptedModel([{ text: 'never asked' }]);
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [
        defineAgent({
          name: 'worker',
          instructions: '',
          model: secondModel,
          guardrails: { output: [counting('out', seen, 'block')] },
        }),
      ],
    });
    const { sessions } = await second.recover();
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(secondModel.calls).toBe(0);
    expect(seen).toEqual(['the answer']);
    expect(result).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: { name: 'out', stage: 'output' },
    });
    validateHistory(result.history);
    await second.shutdown();
  });

  it('suspended while checking the input: recover() checks it again before the first model call', async () => {
    const path = join(directory, 'sessions.db');
    const started: string[] = [];
    const firstModel = scriptedModel([{ text: 'not yet' }]);
    const first = createAgentSystem({ store: createSqliteStore(path) });
    const session = first.spawn(
      defineAgent({
        name: 'worker',
        instructions: '',
        model: firstModel,
        guardrails: { input: [hanging('in', started)] },
      }),
      'hello there',
      { sessionId: 'g-2' },
    );
    await until(() => started.length === 1);
    await first.shutdown();
    expect(await session.result).toMatchObject({ stopReason: 'suspended' });
    expect(firstModel.calls).toBe(0);

    const seen: string[] = [];
    const secondModel = scriptedModel([{ text: 'hi' }]);
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [
        defineAgent({
          name: 'worker',
          instructions: '',
          model: secondModel,
          guardrails: { input: [counting('in', seen, 'allow')] },
        }),
      ],
    });
    const { sessions } = await second.recover();
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(seen).toEqual(['hello there']);
    expect(result).toMatchObject({ stopReason: 'completed', text: 'hi' });
    await second.shutdown();
  });
});
