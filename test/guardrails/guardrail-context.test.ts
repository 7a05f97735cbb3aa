import {
  contextType,
  createAgentSystem,
  defineAgent,
  type GuardrailCheckInfo,
  guardrail,
  run,
  tokenLimit,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';

/** Guardrails receive the run context (typed) and the run's place, in plain runs and in sessions. */

interface AppContext {
  userId: string;
  blockedUsers: ReadonlySet<string>;
}

const perUser = guardrail({
  name: 'per-user',
  check: (_value, info: GuardrailCheckInfo<AppContext>) =>
    info.context.blockedUsers.has(info.context.userId)
      ? { decision: 'block', message: `user ${info.context.userId} may not use this agent` }
      : { decision: 'allow' },
});

function agentWith(model = scriptedModel([{ text: 'hi' }], { loop: true })) {
  return defineAgent({
    name: 'ctx',
    instructions: '',
    model,
    contextType: contextType<AppContext>(),
    guardrails: { input: [perUser, tokenLimit()], output: [perUser] },
  });
}

describe('guardrails and the run context', () => {
  it('a check reads the caller context and where the agent runs', async () => {
    const seen: GuardrailCheckInfo<AppContext>[] = [];
    const agent = defineAgent({
      name: 'ctx',
      instructions: '',
      model: scriptedModel([{ text: 'hi' }]),
      contextType: contextType<AppContext>(),
      guardrails: {
        output: [
          {
            name: 'spy',
            check: (_value, info) => {
              expectTypeOf(info.context).toEqualTypeOf<AppContext>();
              seen.push(info);
              return { decision: 'allow' };
            },
          },
        ],
      },
    });
    const context: AppContext = { userId: 'u1', blockedUsers: new Set() };
    await run(agent, 'hello', { context, sessionId: 's-1' });
    expect(seen[0]).toMatchObject({
      context,
      sessionId: 's-1',
      agent: 'ctx',
      route: 'ctx',
      turn: 1,
      stage: 'output',
    });
  });

  it('blocks one user and not another, in a plain run and in a session turn', async () => {
    const blockedUsers = new Set(['mallory']);
    const ok = await run(agentWith(), 'hello', { context: { userId: 'alice', blockedUsers } });
    expect(ok.stopReason).toBe('completed');
    const blocked = await run(agentWith(), 'hello', { context: { userId: 'mallory', blockedUsers } });
    expect(blocked.stopReason).toBe('guardrail_blocked');
    expect(blocked.guardrail?.message).toBe('user mallory may not use this agent');

    const system = createAgentSystem();
    const session = system.spawn(agentWith(), 'hello', { context: { userId: 'mallory', blockedUsers } });
    expect(await session.result).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: { name: 'per-user', stage: 'input' },
    });
    await system.shutdown();
  });

  it('a guardrail that reads a context fits only agents that give one (compile-time)', () => {
    const compileOnly = (_check: () => unknown): void => undefined;
    compileOnly(() =>
      defineAgent({
        name: 'plain',
        instructions: '',
        model: scriptedModel([]),
        // @ts-expect-error an agent without a context cannot take a guardrail that reads one
        guardrails: { input: [perUser] },
      }),
    );
    // A guardrail that reads no context fits every agent.
    expect(
      defineAgent({
        name: 'plain',
        instructions: '',
        model: scriptedModel([]),
        guardrails: { input: [tokenLimit()] },
      }).guardrails?.input.length,
    ).toBe(1);
  });
});
