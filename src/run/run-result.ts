import type { ErrorInfo } from '../core/errors.ts';
import type { RunEventData } from '../core/events.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult, RunStep, StepToolCall } from '../core/result.ts';
import { statusOf } from '../core/stop-reason.ts';
import { emptyUsage } from '../core/usage.ts';
import { type AgentMachineOutput, runSpendOf } from '../machines/agent.ts';

/** Builds the run's result from the machine's output (or a context flattened with agentOutputOf). Pure. */
export function buildRunResult<TOutput>(context: AgentMachineOutput): RunResult<TOutput> {
  const stopReason = context.stopReason ?? 'error';
  const historyDelta = context.history.slice(context.baseLength);
  const spend = runSpendOf(context);
  const result: RunResult<TOutput> = {
    sessionId: context.sessionId,
    agent: context.agent,
    status: statusOf(stopReason),
    stopReason,
    text: context.text,
    output: context.outputDecoded ? (context.output as TOutput) : undefined,
    steps: stepsOf(historyDelta, context.agent),
    toolCallCount: context.toolCallsRun,
    usage: spend.usage,
    history: context.history,
    historyDelta,
    modelCalls: spend.modelCalls,
    timedOut: stopReason === 'timed_out',
    truncated: context.truncated,
  };
  if (stopReason !== 'completed' && context.error) result.error = context.error;
  if (context.guardrail) result.guardrail = context.guardrail;
  if (spend.nested) result.nested = spend.nested;
  if (context.stopReason === null) {
    result.error = context.error ?? {
      name: 'TroupeError',
      code: 'internal',
      message: 'The run ended without a stop reason.',
    };
  }
  return result;
}

/** Each assistant turn (thought and actions) with the tool results that answer its calls (observations). */
export function stepsOf(delta: readonly Message[], agent: string): RunStep[] {
  const steps: RunStep[] = [];
  // Indexed loops: a run's result is built while its code still runs in V8's baseline tiers, where `for...of`
  // makes an iterator and a result object per message.
  for (let position = 0; position < delta.length; position++) {
    const message = delta[position] as Message;
    if (message.role === 'assistant') {
      const calls = message.toolCalls ?? [];
      // At its final length, made by a loop: no callback per step.
      const toolCalls: StepToolCall[] = new Array(calls.length);
      for (let index = 0; index < calls.length; index++) {
        const call = calls[index] as (typeof calls)[number];
        toolCalls[index] = { id: call.id, name: call.name, args: call.args };
      }
      steps.push({
        index: steps.length + 1,
        agent: message.agent ?? agent,
        thought: message.content,
        toolCalls,
      });
    } else if (message.role === 'tool') {
      const entry = latestCall(steps, message.toolCallId);
      if (entry) {
        entry.result = message.content;
        entry.isError = message.isError === true;
      }
    }
  }
  return steps;
}

/**
 * The latest call with this id among the steps so far: a tool's answer follows the turn that called it, so the
 * search starts there (and an id a provider used again answers its latest call).
 */
function latestCall(steps: readonly RunStep[], callId: string): StepToolCall | undefined {
  for (let step = steps.length - 1; step >= 0; step--) {
    const calls = (steps[step] as RunStep).toolCalls;
    for (let index = calls.length - 1; index >= 0; index--) {
      const call = calls[index] as StepToolCall;
      if (call.id === callId) return call;
    }
  }
  return undefined;
}

/**
 * The result of a run that failed before its machine produced any output (the actor crashed at once, or a group
 * member never reported): the caller's history plus the user message, no steps, the error.
 */
export function failedBeforeAnyStep<TOutput>(
  sessionId: string,
  agent: string,
  history: readonly Message[],
  input: RunInput,
  error: ErrorInfo,
): RunResult<TOutput> {
  const delta: Message[] = [userMessage(input)];
  return {
    sessionId,
    agent,
    status: 'failed',
    stopReason: 'error',
    text: '',
    output: undefined,
    steps: [],
    toolCallCount: 0,
    usage: emptyUsage,
    history: [...history, ...delta],
    historyDelta: delta,
    modelCalls: 0,
    timedOut: false,
    truncated: false,
    error,
  };
}

/** The data of a run's `run_end` event, from its result. */
export function runEndData(result: RunResult<unknown>): RunEventData['run_end'] {
  return {
    status: result.status,
    stopReason: result.stopReason,
    modelCalls: result.modelCalls,
    toolCallCount: result.toolCallCount,
    usage: result.usage,
  };
}
