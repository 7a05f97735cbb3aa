import fc from 'fast-check';
import { createAgentSystem, defineAgent, run, tool, validateHistory } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * Property: whatever tool names a model writes (names of Object.prototype members, handoff tools, defined tools,
 * arbitrary strings), a run ends with a stop reason the limits explain and a valid history, and a session with
 * handoffs keeps answering follow-up messages: no name is mistaken for a handoff or an agent.
 */

const numRuns = process.env.CI ? 200 : 60;

const prototypeNames = Object.getOwnPropertyNames(Object.prototype);

const toolNames = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...prototypeNames) },
  { weight: 2, arbitrary: fc.constantFrom('echo', 'transfer_to_billing', 'transfer_to_triage') },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
);

const turns: fc.Arbitrary<ScriptedTurn[]> = fc.array(
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .array(fc.record({ name: toolNames, n: fc.nat({ max: 3 }) }), { minLength: 1, maxLength: 3 })
        .map(
          (calls): ScriptedTurn => ({
            toolCalls: calls.map((call) => ({ name: call.name, args: { text: String(call.n) } })),
            stopReason: 'tool_use',
          }),
        ),
    },
    { weight: 1, arbitrary: fc.constant<ScriptedTurn>({ text: 'answer', stopReason: 'end_turn' }) },
  ),
  { maxLength: 6 },
);

/** Plays the script, then answers with text for ever (no call fails for running out of turns). */
function modelOf(script: readonly ScriptedTurn[]) {
  return scriptedModel((_request, index) => script[index] ?? { text: 'fallback', stopReason: 'end_turn' });
}

const echo = tool({
  name: 'echo',
  description: 'Echoes',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

const explained = ['completed', 'max_steps', 'duplicate_tool_call', 'tool_call_limit'];

describe('property: tool names from the model', () => {
  it('run(): every run ends with an explained stop reason and a valid history', async () => {
    await fc.assert(
      fc.asyncProperty(turns, async (script) => {
        const agent = defineAgent({
          name: 'a',
          instructions: '',
          model: modelOf(script),
          tools: [echo],
          limits: { maxSteps: 8, maxToolCallsPerTool: 3 },
        });
        const result = await run(agent, 'go');
        expect(explained).toContain(result.stopReason);
        expect(() => validateHistory(result.history)).not.toThrow();
      }),
      { numRuns },
    );
  });

  it('a session with handoffs: only handoff tools hand off, and every follow-up is answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turns, { minLength: 1, maxLength: 3 }),
        turns,
        async (triageScripts, billingScript) => {
          // Billing hands back to triage by name: the two can hand the conversation back and forth.
          const billing = defineAgent({
            name: 'billing',
            instructions: '',
            model: modelOf(billingScript),
            tools: [echo],
            handoffs: ['triage'],
            limits: { maxSteps: 8, maxToolCallsPerTool: 3 },
          });
          // One script per turn: the triage model plays them back to back.
          const triage = defineAgent({
            name: 'triage',
            instructions: '',
            model: modelOf(
              triageScripts.flatMap((script) => [
                ...script,
                { text: 'turn over', stopReason: 'end_turn' as const },
              ]),
            ),
            tools: [echo],
            handoffs: [billing],
            limits: { maxSteps: 8, maxToolCallsPerTool: 3 },
          });
          const system = createAgentSystem({ agents: [triage, billing] });
          try {
            const session = system.spawn(triage, 'hi');
            let result = await session.result;
            for (let turn = 0; turn <= triageScripts.length; turn++) {
              expect([...explained, 'handoff_limit'], result.error?.message).toContain(result.stopReason);
              expect(['triage', 'billing']).toContain(result.agent);
              for (const step of result.path ?? []) expect(['triage', 'billing']).toContain(step);
              expect(() => validateHistory(result.history)).not.toThrow();
              expect(session.status).toBe('idle');
              result = await session.send(`follow-up ${turn}`);
            }
          } finally {
            await system.shutdown();
          }
        },
      ),
      { numRuns },
    );
  });
});
