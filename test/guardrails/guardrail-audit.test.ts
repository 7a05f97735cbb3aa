import { blockedPatterns, createAuditLog, defineAgent, memoryAuditSink, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/** Every guardrail decision of a run reaches the audit log, the block last, naming the guardrail and the stage. */

describe('guardrail decisions in the audit log', () => {
  it('records the allow of the input check and the block of the streamed answer', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const agent = defineAgent({
      name: 'guarded',
      instructions: '',
      model: scriptedModel([{ deltas: ['the code ', 'is 1234-5678'] }]),
      guardrails: {
        input: [{ name: 'in', check: () => ({ decision: 'allow' }) }],
        output: [blockedPatterns([/\d{4}-\d{4}/], { name: 'codes', streaming: true })],
      },
    });
    const result = await run(agent, 'tell me', { audit });
    expect(result.stopReason).toBe('guardrail_blocked');
    await audit.flush();
    const guardrails = sink.records.filter((record) => record.type === 'guardrail');
    expect(guardrails.map((record) => record.data)).toEqual([
      { guardrail: 'in', stage: 'input', decision: 'allow' },
      { guardrail: 'codes', stage: 'output', decision: 'allow' },
      {
        guardrail: 'codes',
        stage: 'output',
        decision: 'block',
        message: 'matched the blocked pattern /\\d{4}-\\d{4}/',
      },
    ]);
    expect(guardrails[0]).toMatchObject({ agent: 'guarded', sessionId: result.sessionId });
  });
});
