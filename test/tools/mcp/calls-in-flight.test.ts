import { describe, expect, it } from 'vitest';
import { bindCaller, type RunRuntime } from '../../../src/run/run-runtime.ts';
import { CallsInFlight } from '../../../src/tools/mcp/calls-in-flight.ts';
import type { ToolContext } from '../../../src/tools/tool.ts';

/** A tool context of `run` (a stand-in runtime: only its identity matters here). */
function contextOf(run: object, callId: string): ToolContext {
  const context: ToolContext = {
    signal: new AbortController().signal,
    sessionId: 's',
    route: 'a',
    turn: 1,
    agent: 'a',
    callId,
    step: 1,
    attempt: 1,
    idempotencyKey: callId,
    context: undefined,
  };
  bindCaller(context, run as RunRuntime);
  return context;
}

describe("a server's request is served for the run whose calls are in flight", () => {
  it('is the latest call of the one run in flight; none or several runs refuse it', () => {
    const calls = new CallsInFlight();
    expect(calls.caller('srv')).toEqual({ refusal: expect.stringMatching(/no tool call/) });
    const runA = {};
    const leaveFirst = calls.enter(contextOf(runA, 'c1'));
    const leaveSecond = calls.enter(contextOf(runA, 'c2'));
    expect(calls.caller('srv')).toMatchObject({ context: { callId: 'c2' } });
    const leaveOther = calls.enter(contextOf({}, 'c9'));
    expect(calls.caller('srv')).toEqual({ refusal: expect.stringMatching(/several runs.*scope: 'session'/) });
    leaveOther();
    leaveSecond();
    expect(calls.caller('srv')).toMatchObject({ context: { callId: 'c1' } });
    leaveFirst();
    expect(calls.caller('srv')).toEqual({ refusal: expect.stringMatching(/no tool call/) });
  });
});
