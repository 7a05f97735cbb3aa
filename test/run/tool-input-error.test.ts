import { defineAgent, type RunEvent, stream, ToolInputError, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('a tool that throws ToolInputError', () => {
  it('answers the model with the message once, without retries, and stays available', async () => {
    let attempts = 0;
    const divide = tool({
      name: 'divide',
      description: 'a / b',
      input: z.object({ a: z.number(), b: z.number() }),
      maxRetries: 2,
      execute: ({ a, b }) => {
        attempts++;
        if (b === 0) throw new ToolInputError('cannot divide by zero; pick another divisor.');
        return a / b;
      },
    });
    const model = scriptedModel((request, index) => {
      if (index === 0)
        return { toolCalls: [{ name: 'divide', args: { a: 1, b: 0 } }], stopReason: 'tool_use' };
      if (index === 1)
        return { toolCalls: [{ name: 'divide', args: { a: 6, b: 3 } }], stopReason: 'tool_use' };
      return { text: `tools: ${request.tools.map((t) => t.name).join(',')}`, stopReason: 'end_turn' };
    });
    const s = stream(defineAgent({ name: 'a', instructions: '', model, tools: [divide] }), 'go');
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(attempts).toBe(2);
    expect(events.filter((event) => event.type === 'tool_retry')).toHaveLength(0);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'completed', text: 'tools: divide' });
    const answers = result.historyDelta.filter((message) => message.role === 'tool');
    expect(answers[0]).toMatchObject({
      isError: true,
      content: 'Error: cannot divide by zero; pick another divisor.',
    });
    expect(answers[1]).toMatchObject({ content: '2' });
  });
});
