import { defineAgent, type ModelProvider, type ModelRequest, stream, tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A model that streams one tool call's arguments in small pieces (a key split across pieces), then answers. */
function streamingModel(pieces: string[]): ModelProvider {
  let calls = 0;
  return {
    provider: 'test',
    model: 'streaming',
    async generate(request: ModelRequest) {
      calls++;
      if (calls > 1)
        return {
          text: 'done',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        };
      for (const [index, argsDelta] of pieces.entries())
        request.onDelta?.({
          type: 'tool_call',
          index: 0,
          ...(index === 0 ? { id: 'c1', name: 'login' } : {}),
          argsDelta,
        });
      return {
        text: '',
        toolCalls: [{ id: 'c1', name: 'login', args: JSON.parse(pieces.join('')) }],
        stopReason: 'tool_use',
        usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
      };
    },
  };
}

describe('streamed tool arguments', () => {
  it('stop showing once a secret key appears, even split across pieces; the tool gets the real value', async () => {
    let received = '';
    const login = tool({
      name: 'login',
      description: 'logs in',
      input: z.object({ user: z.string(), passcode: z.string() }),
      secret: ['passcode'],
      execute: ({ passcode }) => {
        received = passcode;
        return 'ok';
      },
    });
    const pieces = ['{"user": "ada", "pass', 'code": "hun', 'ter2"}'];
    const s = stream(
      defineAgent({ name: 'a', instructions: '', model: streamingModel(pieces), tools: [login] }),
      'go',
    );
    const shown: string[] = [];
    let callEvent: unknown;
    for await (const event of s) {
      if (event.type === 'tool_call_delta') shown.push(event.data.argsDelta);
      if (event.type === 'tool_call') callEvent = event.data.args;
    }
    await s.result;
    expect(received).toBe('hunter2');
    expect(shown.join('')).not.toContain('hun');
    expect(shown.join('')).toBe('{"user": "ada", "pass');
    expect(callEvent).toEqual({ user: 'ada', passcode: '[redacted]' });
  });

  it('flow unchanged when no secret key appears', async () => {
    const echo = tool({
      name: 'login',
      description: 'x',
      input: z.object({ user: z.string() }),
      execute: () => 'ok',
    });
    const pieces = ['{"us', 'er": "ada"}'];
    const s = stream(
      defineAgent({ name: 'a', instructions: '', model: streamingModel(pieces), tools: [echo] }),
      'go',
    );
    const shown: string[] = [];
    for await (const event of s) if (event.type === 'tool_call_delta') shown.push(event.data.argsDelta);
    expect(shown).toEqual(pieces);
  });
});
