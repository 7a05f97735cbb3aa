import { AssertionError } from 'node:assert';
import { findHistoryIssues } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import type { RunResult, StepToolCall } from '../core/result.ts';
import type { StopReason } from '../core/stop-reason.ts';
import { partiallyMatches } from './partial-match.ts';

/**
 * Assertions on a run's result, for any test runner (vitest, node:test, jest, mocha): each throws node's
 * `AssertionError` with a message that says what the run did instead, and returns the same object, so they chain.
 */
export interface RunExpectation<TOutput = unknown> {
  /** The run ended with this stop reason (`completed`, `max_steps`, `error`, ...). */
  toEndWith(stopReason: StopReason): RunExpectation<TOutput>;
  /**
   * The run called this tool at least once, with arguments that contain `args` when given (a partial deep match:
   * extra argument keys are fine).
   */
  toHaveCalledTool(name: string, args?: JsonValue): RunExpectation<TOutput>;
  /** The run never called this tool. */
  toNotHaveCalledTool(name: string): RunExpectation<TOutput>;
  /** The history is valid: every tool call answered by exactly one tool message, roles in a legal order. */
  toHaveValidHistory(): RunExpectation<TOutput>;
  /**
   * The run made at most `n` model calls (`result.modelCalls`): those of agents it used as tools and of MCP sampling
   * count too.
   */
  toUseAtMostModelCalls(n: number): RunExpectation<TOutput>;
  /** The decoded output contains `expected` (a partial deep match). */
  toHaveOutput(expected: unknown): RunExpectation<TOutput>;
}

/** Starts assertions on a run's result: `expectRun(result).toEndWith('completed').toHaveCalledTool('search')`. */
export function expectRun<TOutput>(result: RunResult<TOutput>): RunExpectation<TOutput> {
  const fail = (message: string, details: { actual?: unknown; expected?: unknown; operator: string }) => {
    throw new AssertionError({ message, ...details });
  };
  const calls = (): StepToolCall[] => result.steps.flatMap((step) => step.toolCalls);
  const expectation: RunExpectation<TOutput> = {
    toEndWith(stopReason) {
      if (result.stopReason !== stopReason)
        fail(
          `expected the run to end with "${stopReason}", but it ended with "${result.stopReason}" (status ${result.status})${errorText(result)}`,
          { actual: result.stopReason, expected: stopReason, operator: 'toEndWith' },
        );
      return expectation;
    },
    toHaveCalledTool(name, args) {
      const made = calls();
      const found = made.some(
        (call) => call.name === name && (args === undefined || partiallyMatches(call.args, args)),
      );
      if (!found)
        fail(
          `expected the run to call tool "${name}"${args === undefined ? '' : ` with arguments containing ${JSON.stringify(args)}`}, but it called ${describeCalls(made)}`,
          {
            actual: made.map(({ name, args }) => ({ name, args })),
            expected: { name, args },
            operator: 'toHaveCalledTool',
          },
        );
      return expectation;
    },
    toNotHaveCalledTool(name) {
      const made = calls().filter((call) => call.name === name);
      if (made.length > 0)
        fail(`expected the run not to call tool "${name}", but it called ${describeCalls(made)}`, {
          actual: made.map(({ name, args }) => ({ name, args })),
          operator: 'toNotHaveCalledTool',
        });
      return expectation;
    },
    toHaveValidHistory() {
      const issues = findHistoryIssues(result.history);
      if (issues.length > 0)
        fail(
          `expected a valid history, but: ${issues.map((issue) => `message [${issue.index}] ${issue.message}`).join('; ')}`,
          { actual: issues, expected: [], operator: 'toHaveValidHistory' },
        );
      return expectation;
    },
    toUseAtMostModelCalls(n) {
      if (result.modelCalls > n)
        fail(
          `expected at most ${n} model call(s), but the run made ${result.modelCalls} (stop reason "${result.stopReason}")`,
          { actual: result.modelCalls, expected: n, operator: 'toUseAtMostModelCalls' },
        );
      return expectation;
    },
    toHaveOutput(expected) {
      if (!partiallyMatches(result.output, expected))
        fail(
          `expected the output to contain ${JSON.stringify(expected)}, but it is ${result.output === undefined ? 'undefined' : JSON.stringify(result.output)} (stop reason "${result.stopReason}")${errorText(result)}`,
          { actual: result.output, expected, operator: 'toHaveOutput' },
        );
      return expectation;
    },
  };
  return expectation;
}

function errorText(result: RunResult<unknown>): string {
  return result.error ? `: ${result.error.name} ${result.error.code}: ${result.error.message}` : '';
}

function describeCalls(calls: readonly StepToolCall[]): string {
  if (calls.length === 0) return 'no tool';
  const shown = calls.slice(0, 8).map((call) => `${call.name}(${JSON.stringify(call.args)})`);
  return `${shown.join(', ')}${calls.length > shown.length ? `, and ${calls.length - shown.length} more` : ''}`;
}
