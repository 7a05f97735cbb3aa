import { ConfigError } from '../core/errors.ts';
import type { GuardrailStage } from '../core/events.ts';
import { checkOptionObject, isPlainObject } from '../core/options.ts';
import type { RunContextInfo } from '../run/run-context.ts';
import type { GuardrailVerdict } from './verdict.ts';

/**
 * What a check learns besides the value: the run's context and place (RunContextInfo: `context`, `sessionId`,
 * `agent`, `route`, `turn`), the stage, the text it reads, and a signal to stop early.
 */
export interface GuardrailCheckInfo<TContext = unknown> extends RunContextInfo<TContext> {
  stage: GuardrailStage;
  /**
   * The value as text (structured output and tool arguments as JSON; a tool's secret arguments redacted): what a
   * text check (patterns, a token count, a judge model) reads.
   */
  text: string;
  /**
   * Aborted when the check is no longer wanted: the run ended, another guardrail of the same check blocked, or the
   * check timed out. Pass it to anything slow the check does.
   */
  signal: AbortSignal;
  /** For the streaming checks of an output guardrail: true while the text is a part of a reply still arriving. */
  partial: boolean;
  /** The tool and call checked, for the tool_input and tool_output stages. */
  tool?: string | undefined;
  callId?: string | undefined;
}

/**
 * The check of a guardrail. The value is the run's input text (input stage), the final answer's text or, with an
 * output schema, its decoded value (output stage), a tool call's validated arguments (tool_input) or a tool's
 * result as the model would read it (tool_output).
 */
export type GuardrailCheck<TContext = unknown> = (
  value: unknown,
  info: GuardrailCheckInfo<TContext>,
) => GuardrailVerdict | Promise<GuardrailVerdict>;

export interface GuardrailOptions<TContext = unknown> {
  /** Shown on guardrail events and in a blocked run's result. 1-64 letters, digits, `_`, `-` or `.`. */
  name: string;
  check: GuardrailCheck<TContext>;
  /**
   * Input guardrails only. `blocking` (default): checked before the first model call. `parallel`: checked while the
   * first model call runs; a block cancels that call (through its AbortSignal). Text the call streamed before the
   * block has already been delivered.
   */
  mode?: 'blocking' | 'parallel' | undefined;
  /**
   * Output guardrails only. Also check text while the model streams it: the check gets the reply's text so far at
   * each chunk (`info.partial` true). A delta is delivered once the text up to it passed; after a block no further
   * delta is delivered, the call is cancelled and the run ends guardrail_blocked. Such a guardrail checks every
   * reply's text as it streams, and not again once the reply is whole.
   */
  streaming?: boolean | undefined;
  /** A check that has not answered after this long counts as failed (see `onError`). Default 30 000 ms; null: none. */
  timeoutMs?: number | null | undefined;
  /** What a check that throws, times out or returns no verdict decides: `block` (default, fail closed) or `warn`. */
  onError?: 'block' | 'warn' | undefined;
  /**
   * Tool guardrails only: what a block does. `stop` (default): the run ends guardrail_blocked, the call answered as
   * blocked. `answer`: the model gets an error result saying the call was blocked, and the run goes on.
   */
  onBlock?: 'stop' | 'answer' | undefined;
}

/**
 * A checked guardrail, from `guardrail()`: usable on any stage of any number of agents whose context type gives it
 * the context it reads (one reading no context fits every agent).
 */
export interface Guardrail<TContext = unknown> {
  readonly kind: 'guardrail';
  readonly name: string;
  readonly check: GuardrailCheck<TContext>;
  readonly mode: 'blocking' | 'parallel';
  readonly streaming: boolean;
  readonly timeoutMs: number | null;
  readonly onError: 'block' | 'warn';
  readonly onBlock: 'stop' | 'answer';
}

/** The guardrails of an agent, by stage; each is a `guardrail(...)` or its options. */
export interface AgentGuardrailOptions<TContext = unknown> {
  input?: readonly (Guardrail<TContext> | GuardrailOptions<TContext>)[] | undefined;
  output?: readonly (Guardrail<TContext> | GuardrailOptions<TContext>)[] | undefined;
  toolInput?: readonly (Guardrail<TContext> | GuardrailOptions<TContext>)[] | undefined;
  toolOutput?: readonly (Guardrail<TContext> | GuardrailOptions<TContext>)[] | undefined;
}

/** An agent's guardrails sorted by when they run. Absent on an agent without any (its runs pay nothing). */
export interface AgentGuardrails {
  /** Input guardrails checked before the first model call. */
  readonly input: readonly Guardrail[];
  /** Input guardrails checked beside the first model call. */
  readonly parallelInput: readonly Guardrail[];
  /** Output guardrails checked on the whole final answer. */
  readonly output: readonly Guardrail[];
  /** Output guardrails checked on streamed text as it arrives. */
  readonly streamingOutput: readonly Guardrail[];
  readonly toolInput: readonly Guardrail[];
  readonly toolOutput: readonly Guardrail[];
}

/** Thirty seconds: room for a judge model's call, short of hanging a run on a check that never answers. */
export const defaultGuardrailTimeoutMs = 30_000;

const namePattern = /^[a-zA-Z0-9_.-]{1,64}$/;
const optionKeys = ['name', 'check', 'mode', 'streaming', 'timeoutMs', 'onError', 'onBlock'];

/**
 * Defines a guardrail: a named check of a run's input, its output, or a tool call's arguments or result, deciding
 * `allow`, `warn` (a guardrail event, the run goes on) or `block` (the run ends with guardrail_blocked).
 *
 *     const noSecrets = guardrail({
 *       name: 'no-secrets',
 *       check: (_value, { text }) => (text.includes('sk-') ? { decision: 'block', message: 'an API key' } : { decision: 'allow' }),
 *     });
 */
export function guardrail<TContext = unknown>(options: GuardrailOptions<TContext>): Guardrail<TContext> {
  const where = `guardrail(${isPlainObject(options) ? JSON.stringify(options.name) : ''})`;
  checkOptionObject(options, optionKeys, where);
  if (typeof options.name !== 'string' || !namePattern.test(options.name))
    throw new ConfigError(`${where}: name must be 1-64 letters, digits, "_", "-" or ".".`);
  if (typeof options.check !== 'function') throw new ConfigError(`${where}: check must be a function.`);
  const oneOf = <T extends string>(key: keyof GuardrailOptions, values: readonly T[], fallback: T): T => {
    const value = options[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'string' || !values.includes(value as T))
      throw new ConfigError(`${where}: ${key} must be ${values.map((v) => `'${v}'`).join(' or ')}.`);
    return value as T;
  };
  if (options.streaming !== undefined && typeof options.streaming !== 'boolean')
    throw new ConfigError(`${where}: streaming must be a boolean.`);
  const timeoutMs = options.timeoutMs === undefined ? defaultGuardrailTimeoutMs : options.timeoutMs;
  if (
    timeoutMs !== null &&
    (typeof timeoutMs !== 'number' || !(timeoutMs > 0) || !Number.isFinite(timeoutMs))
  )
    throw new ConfigError(`${where}: timeoutMs must be a positive number of milliseconds, or null.`);
  const created: Guardrail<TContext> = Object.freeze({
    kind: 'guardrail',
    name: options.name,
    check: options.check,
    mode: oneOf('mode', ['blocking', 'parallel'], 'blocking'),
    streaming: options.streaming ?? false,
    timeoutMs,
    onError: oneOf('onError', ['block', 'warn'], 'block'),
    onBlock: oneOf('onBlock', ['stop', 'answer'], 'stop'),
  });
  made.add(created);
  return created;
}

/** Guardrails made by `guardrail()`: only these skip the checks (an object that merely looks like one does not). */
const made = new WeakSet<object>();

function isGuardrail<TContext>(
  value: Guardrail<TContext> | GuardrailOptions<TContext>,
): value is Guardrail<TContext> {
  return typeof value === 'object' && value !== null && made.has(value);
}

const stageKeys = ['input', 'output', 'toolInput', 'toolOutput'] as const;

/**
 * Checks an agent's `guardrails` option and sorts the guardrails by when they run; undefined when there are none.
 * Throws ConfigError for a bad entry, a name used twice in one stage, or an option that does not apply to its stage.
 */
export function resolveGuardrails<TContext>(
  options: AgentGuardrailOptions<TContext> | undefined,
  where: string,
): AgentGuardrails | undefined {
  if (options === undefined) return undefined;
  checkOptionObject(options, stageKeys, `${where}: guardrails`);
  const stages = {} as Record<(typeof stageKeys)[number], Guardrail[]>;
  for (const key of stageKeys) {
    const given = options[key] ?? [];
    if (!Array.isArray(given))
      throw new ConfigError(`${where}: guardrails.${key} must be an array of guardrail(...) definitions.`);
    const seen = new Set<string>();
    stages[key] = given.map((entry: Guardrail<TContext> | GuardrailOptions<TContext>) => {
      // The run hands each check its own context: stored as reading an unknown one.
      const resolved = (isGuardrail(entry) ? entry : guardrail(entry)) as unknown as Guardrail;
      if (seen.has(resolved.name))
        throw new ConfigError(`${where}: guardrails.${key} lists "${resolved.name}" twice.`);
      seen.add(resolved.name);
      if (key !== 'input' && resolved.mode === 'parallel')
        throw new ConfigError(
          `${where}: guardrail "${resolved.name}": mode 'parallel' is for input guardrails.`,
        );
      if (key !== 'output' && resolved.streaming)
        throw new ConfigError(`${where}: guardrail "${resolved.name}": streaming is for output guardrails.`);
      return resolved;
    });
  }
  if (stageKeys.every((key) => stages[key].length === 0)) return undefined;
  return Object.freeze({
    input: stages.input.filter((g) => g.mode === 'blocking'),
    parallelInput: stages.input.filter((g) => g.mode === 'parallel'),
    output: stages.output.filter((g) => !g.streaming),
    streamingOutput: stages.output.filter((g) => g.streaming),
    toolInput: stages.toolInput,
    toolOutput: stages.toolOutput,
  });
}
