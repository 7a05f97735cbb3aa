import type { Agent } from '../agent/define-agent.ts';
import type { Clock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import type { RunStatus } from '../core/stop-reason.ts';
import type { InspectObserver } from './inspect.ts';
import { type RunOptions, run } from './run.ts';

/** How `parallel` merges the answers: majority vote, all of them in order, or a synthesizer agent's answer. */
export type MergeStrategy = 'vote' | 'concat' | Agent<unknown>;

export interface ParallelOptions {
  merge: MergeStrategy;
}

export interface ParallelRunOptions {
  signal?: AbortSignal;
  history?: readonly Message[];
  clock?: Clock;
  inspect?: InspectObserver;
}

/** The merged answer of agents that worked side by side on one task (REQUIREMENTS M5, reference 003 §3.15). */
export interface ParallelResult {
  /** completed when the merge produced an answer; failed when no agent completed (or the synthesizer failed). */
  status: RunStatus;
  text: string;
  /** vote: the winning output; concat: every completed agent's output (or text), in order; synthesizer: its output. */
  output: JsonValue | undefined;
  /** Every agent's own result, in the order the agents were given. */
  results: RunResult<unknown>[];
  /** vote only: how many agents gave each distinct answer. */
  votes?: Record<string, number>;
  /** synthesizer only: its run. */
  synthesis?: RunResult<unknown>;
}

export interface ParallelGroup {
  readonly kind: 'parallel';
  readonly agents: readonly Agent<unknown>[];
  run(input: RunInput, options?: ParallelRunOptions): Promise<ParallelResult>;
}

/**
 * Runs several agents on the same task at the same time, each as its own actor, then merges their answers. An
 * agent that fails does not fail the group; it just does not count. Never rejects except for bad input.
 */
export function parallel(agents: readonly Agent<unknown>[], options: ParallelOptions): ParallelGroup {
  if (!Array.isArray(agents) || agents.length === 0 || agents.some((agent) => agent?.kind !== 'agent'))
    throw new ConfigError('parallel(): give a non-empty array of agents from defineAgent().');
  const merge = options?.merge;
  if (merge !== 'vote' && merge !== 'concat' && (merge as Agent<unknown> | undefined)?.kind !== 'agent')
    throw new ConfigError("parallel(): merge must be 'vote', 'concat' or a synthesizer agent.");
  const group = [...agents];
  return {
    kind: 'parallel',
    agents: group,
    async run(input, runOptions = {}) {
      const base: RunOptions = {};
      if (runOptions.signal) base.signal = runOptions.signal;
      if (runOptions.history) base.history = runOptions.history;
      if (runOptions.clock) base.clock = runOptions.clock;
      if (runOptions.inspect) base.inspect = runOptions.inspect;
      const results = await Promise.all(group.map((agent) => run(agent, input, base)));
      const done = results.filter((result) => result.status === 'completed');
      if (merge === 'vote') return vote(results, done);
      if (merge === 'concat') return concat(results, done);
      return synthesize(merge, input, results, done, base);
    },
  };
}

function answerOf(result: RunResult<unknown>): JsonValue {
  return result.output !== undefined ? (result.output as JsonValue) : result.text;
}

/** Answers compare after trimming and lower-casing text, or as canonical JSON for structured outputs. */
function ballot(result: RunResult<unknown>): string {
  const answer = answerOf(result);
  return typeof answer === 'string' ? answer.trim().toLowerCase() : JSON.stringify(answer);
}

function vote(results: RunResult<unknown>[], done: RunResult<unknown>[]): ParallelResult {
  const votes: Record<string, number> = {};
  for (const result of done) votes[ballot(result)] = (votes[ballot(result)] ?? 0) + 1;
  let winner: RunResult<unknown> | undefined;
  for (const result of done) {
    // The most votes wins; a tie goes to the answer given first.
    if (!winner || (votes[ballot(result)] ?? 0) > (votes[ballot(winner)] ?? 0)) winner = result;
  }
  if (!winner) return { status: 'failed', text: '', output: undefined, results, votes };
  return { status: 'completed', text: winner.text, output: answerOf(winner), results, votes };
}

function concat(results: RunResult<unknown>[], done: RunResult<unknown>[]): ParallelResult {
  if (done.length === 0) return { status: 'failed', text: '', output: undefined, results };
  return {
    status: 'completed',
    text: done.map((result) => `[${result.agent}]\n${result.text}`).join('\n\n'),
    output: done.map(answerOf),
    results,
  };
}

async function synthesize(
  synthesizer: Agent<unknown>,
  input: RunInput,
  results: RunResult<unknown>[],
  done: RunResult<unknown>[],
  options: RunOptions,
): Promise<ParallelResult> {
  if (done.length === 0) return { status: 'failed', text: '', output: undefined, results };
  const task =
    typeof input === 'string' ? input : input.map((part) => (part.type === 'text' ? part.text : '')).join('');
  const answers = done.map((result) => `[${result.agent}]\n${result.text}`).join('\n\n');
  const { history: _ignored, ...rest } = options;
  const synthesis = await run(
    synthesizer,
    `Task: ${task}\n\nAnswers from ${done.length} agent(s):\n\n${answers}\n\nMerge them into one answer.`,
    rest,
  );
  return {
    status: synthesis.status === 'completed' ? 'completed' : 'failed',
    text: synthesis.text,
    output: answerOf(synthesis),
    results,
    synthesis,
  };
}
