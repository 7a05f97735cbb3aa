import type { Message } from '../core/messages.ts';
import { userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { addUsage } from '../core/usage.ts';
import { type AgentContext, runSpendOf } from '../machines/agent.ts';
import type { SessionContext } from '../machines/session.ts';
import { stepsOf } from '../run/run-result.ts';

/** The turn's RunResult from the session context right after the turn ended. Pure. */
export function turnResult<TOutput>(context: SessionContext): RunResult<TOutput> {
  const turn = context.lastTurn;
  const transcript = context.transcript;
  const historyDelta = turn ? transcript.slice(turn.turnStart) : [];
  const stopReason = turn?.stopReason ?? 'error';
  const result: RunResult<TOutput> = {
    sessionId: context.config.sessionId,
    agent: turn?.agent ?? context.current,
    status: turn?.status ?? 'failed',
    stopReason,
    text: turn?.text ?? '',
    output: turn?.outputDecoded ? (turn.output as TOutput) : undefined,
    steps: stepsOf(historyDelta, turn?.agent ?? context.current),
    toolCallCount: turn?.toolCallsRun ?? 0,
    usage: turn?.usage ?? { input: 0, output: 0, cached: 0, reasoning: 0 },
    history: transcript,
    historyDelta,
    modelCalls: turn?.modelCalls ?? 0,
    timedOut: stopReason === 'timed_out',
    truncated: turn?.truncated ?? false,
    path: turn?.path ?? [context.current],
  };
  if (stopReason !== 'completed' && turn?.error) result.error = turn.error;
  if (turn?.guardrail) result.guardrail = turn.guardrail;
  return result;
}

/**
 * The result of a turn that did not end on its own (the session was stopped or suspended, or failed internally):
 * the turn's path and spend so far, the conversation up to the agent holding it, and why it ended.
 */
export function interruptedTurnResult<TOutput>(
  context: SessionContext,
  status: RunResult['status'],
  stopReason: RunResult['stopReason'],
  error: NonNullable<RunResult['error']>,
  /** What the agent holding the conversation had spent when the turn was cut (its messages stay with its run). */
  active?: Pick<AgentContext, 'usage' | 'modelCalls' | 'toolCallsRun'>,
): RunResult<TOutput> {
  const historyDelta = context.transcript.slice(context.turnStart);
  // What the agent holding the conversation spent in all, its agents used as tools included.
  const activeSpend = active ? runSpendOf(active) : undefined;
  const usage = activeSpend ? addUsage(context.spent.usage, activeSpend.usage) : context.spent.usage;
  return {
    sessionId: context.config.sessionId,
    agent: context.current,
    status,
    stopReason,
    text: '',
    output: undefined,
    steps: stepsOf(historyDelta, context.current),
    toolCallCount: context.spent.toolCallsRun + (active?.toolCallsRun ?? 0),
    usage,
    history: context.transcript,
    historyDelta,
    modelCalls: context.spent.modelCalls + (activeSpend?.modelCalls ?? 0),
    timedOut: false,
    truncated: false,
    path: context.path,
    error,
  };
}

/**
 * The result of a turn that was queued and never started (the session closed or was suspended first): nothing was
 * said or spent; the conversation is as it stood.
 */
export function unstartedTurnResult<TOutput>(
  context: SessionContext,
  stopReason: RunResult['stopReason'],
  error: NonNullable<RunResult['error']>,
): RunResult<TOutput> {
  return {
    sessionId: context.config.sessionId,
    agent: context.current,
    status: 'stopped',
    stopReason,
    text: '',
    output: undefined,
    steps: [],
    toolCallCount: 0,
    usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
    history: context.transcript,
    historyDelta: [],
    modelCalls: 0,
    timedOut: false,
    truncated: false,
    path: [],
    error,
  };
}

/** The result of a sub-run that could not run or was cut off. */
export function subFailure(
  sessionId: string,
  agent: string,
  input: string,
  message: string,
): RunResult<unknown> {
  const delta: Message[] = [userMessage(input)];
  return {
    sessionId,
    agent,
    status: 'stopped',
    stopReason: 'aborted',
    text: '',
    output: undefined,
    steps: [],
    toolCallCount: 0,
    usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
    history: delta,
    historyDelta: delta,
    modelCalls: 0,
    timedOut: false,
    truncated: false,
    error: { name: 'RunStopped', code: 'aborted', message },
  };
}
