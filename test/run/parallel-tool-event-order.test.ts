import { type Agent, defineAgent, type RunEvent, stream, tool, toSSE } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * The order the README promises for the tool calls of one turn, which run in parallel: the stream (and SSE, one
 * chunk per event) gives each call's tool_call when it starts and its tool_response when it finishes, a call always
 * before its own result; steps() gives call 1, result 1, call 2, result 2. The same on the one-actor path and in a
 * session (an agent with handoffs).
 */

function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** c1 (slow) waits until `slowMayFinish` resolves; c2 (fast) answers at once and then calls `fastDone`. */
function parallelAgent(
  slowMayFinish: Promise<void>,
  fastDone: () => void,
  withHandoff: boolean,
): Agent<undefined> {
  const other = defineAgent({ name: 'other', instructions: 'x', model: scriptedModel([{ text: 'unused' }]) });
  return defineAgent({
    name: 'worker',
    instructions: 'x',
    model: scriptedModel([
      {
        toolCalls: [
          { id: 'c1', name: 'slow', args: {} },
          { id: 'c2', name: 'fast', args: {} },
        ],
        stopReason: 'tool_use',
      },
      { text: 'all done' },
    ]),
    tools: [
      tool({
        name: 'slow',
        description: 'waits',
        input: z.object({}),
        execute: async () => {
          await slowMayFinish;
          return 'slow done';
        },
      }),
      tool({
        name: 'fast',
        description: 'returns at once',
        input: z.object({}),
        execute: () => {
          fastDone();
          return 'fast done';
        },
      }),
    ],
    ...(withHandoff ? { handoffs: [other] } : {}),
  });
}

function toolOrder(events: readonly RunEvent[]): string[] {
  return events.flatMap((e) =>
    e.type === 'tool_call'
      ? [`call ${e.data.callId}`]
      : e.type === 'tool_response'
        ? [`result ${e.data.callId}`]
        : [],
  );
}

/** The same, read back from SSE chunks. */
function sseOrder(chunks: readonly string[]): string[] {
  return chunks.flatMap((chunk) => {
    const type = /^event: (.*)$/m.exec(chunk)?.[1];
    const data = JSON.parse(/^data: (.*)$/m.exec(chunk)?.[1] ?? '{}') as { data: { callId?: string } };
    if (type === 'tool_call') return [`call ${data.data.callId}`];
    if (type === 'tool_response') return [`result ${data.data.callId}`];
    return [];
  });
}

describe.each([
  ['a plain run', false],
  ['a run in a session (an agent with handoffs)', true],
])('parallel tool calls in %s', (_, withHandoff) => {
  it('stream and SSE: as things happen, each call before its own result (the fast result first)', async () => {
    const fastStreamed = gate();
    const s = stream(
      parallelAgent(fastStreamed.promise, () => undefined, withHandoff),
      'go',
    );
    const events: RunEvent[] = [];
    for await (const event of s) {
      events.push(event);
      // The slow call finishes only once the fast call's result has reached the stream.
      if (event.type === 'tool_response' && event.data.callId === 'c2') fastStreamed.open();
    }
    expect((await s.result).text).toBe('all done');
    expect(toolOrder(events)).toEqual(['call c1', 'call c2', 'result c2', 'result c1']);
    expect(sseOrder(events.map(toSSE))).toEqual(toolOrder(events));
  });

  it('steps(): in call order, each call followed by its result, whatever finished first', async () => {
    const fastFinished = gate();
    const s = stream(parallelAgent(fastFinished.promise, fastFinished.open, withHandoff), 'go');
    const items: string[] = [];
    for await (const item of s.steps())
      items.push(`${item.type}${'callId' in item ? ` ${item.callId}` : ''}`);
    expect(items).toEqual([
      'tool_call c1',
      'tool_result c1',
      'tool_call c2',
      'tool_result c2',
      'final_response',
    ]);
  });
});
