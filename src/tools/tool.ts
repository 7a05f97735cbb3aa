import type { z } from 'zod';
import {
  type BreakerOptions,
  checkBreakerOptions,
  type ResolvedBreaker,
} from '../breakers/circuit-breaker.ts';
import { ConfigError } from '../core/errors.ts';
import type { JsonObject } from '../core/json.ts';
import { checkOptionObject, describeValue, isPlainObject } from '../core/options.ts';
import { isPrototypeName } from '../core/records.ts';
import { zod } from '../core/zod.ts';
import type { ContextType, RunContextInfo } from '../run/run-context.ts';

/** What a tool's `execute` receives besides its arguments: the run context (`context`) and where the call sits. */
export interface ToolContext<TContext = unknown> extends RunContextInfo<TContext> {
  /** Aborted when the call times out, the run is aborted or times out, or the run ends. Pass it on. */
  signal: AbortSignal;
  /** The session's id as the user gave it (or the run's `sessionId`). */
  sessionId: string;
  /**
   * Where the calling agent runs in the session: its name for the agent holding the conversation, or the chain of
   * calls that started a nested agent (`support>call_7/researcher` for an agent used as a tool).
   */
  route: string;
  /** The turn of the session (from 1) the call belongs to; 1 in a plain run. */
  turn: number;
  /** Name of the agent that called the tool. */
  agent: string;
  /** The model's id for this call. */
  callId: string;
  /** The loop step (model call number) that asked for the call. */
  step: number;
  /** 1 for the first attempt, 2 for the first retry, ... */
  attempt: number;
  /**
   * `${sessionId}:${turn}:${step}:${callId}`, where a nested agent's call id is prefixed by the ids of the calls that
   * started it (`call_7/call_2`). A pure function of where the call sits in the session: the same across retries,
   * across a supervised restart and across a crash and `recover()`, so a tool with side effects can deduplicate on it.
   */
  idempotencyKey: string;
}

/**
 * A tool the model can call. `execute` is declared with method syntax on purpose: it makes `Tool<{ a: number }>`
 * assignable to `Tool` (parameter bivariance), so typed tools fit in an agent's tool list.
 */
export interface Tool<TArgs = unknown, TResult = unknown, TContext = unknown> {
  readonly kind: 'tool';
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<TArgs>;
  /** JSON Schema of the arguments, as the providers send it. */
  readonly parameters: JsonObject;
  readonly timeoutMs: number | undefined;
  readonly maxRetries: number | undefined;
  /** A failure of this tool fails the agent actor (supervision decides: restart, stop or escalate); no retries. */
  readonly fatal: boolean;
  /** The tool's circuit breaker (shared by every run of the process), when it has one; see ToolOptions.breaker. */
  readonly breaker?: ResolvedBreaker | undefined;
  /** Argument names whose values never reach the inspector or traces (API keys, tokens, passwords). */
  readonly secret: readonly string[];
  /** Whether a call must be approved by a person before it runs (see ToolOptions.needsApproval). */
  readonly needsApproval: boolean | StoredApprovalPredicate<TArgs>;
  /** Set on tools whose answer comes from a person (`askHuman`): a call waits for `session.answer()`. */
  readonly asksHuman?: true;
  execute(args: TArgs, context: ToolContext<TContext>): TResult | Promise<TResult>;
}

export interface ToolOptions<TSchema extends z.ZodType, TResult, TContext = unknown> {
  /** 1-64 letters, digits, `_` or `-` (the strictest provider's rule). */
  name: string;
  description: string;
  input: TSchema;
  /**
   * The run context the tool needs, `contextType<AppContext>()`: `ctx.context` is typed by it, and an agent given
   * this tool must be run with a context of that type.
   */
  contextType?: ContextType<TContext> | undefined;
  execute: (args: z.output<TSchema>, context: ToolContext<TContext>) => TResult | Promise<TResult>;
  /** Overrides the agent's `limits.toolTimeoutMs` for this tool. */
  timeoutMs?: number | undefined;
  /** Overrides the agent's `limits.maxToolRetries` for this tool. */
  maxRetries?: number | undefined;
  /**
   * The tool's failure is not something the model can work around: it fails the agent actor and the session's
   * supervision strategy decides (restart from the last checkpoint, stop, or escalate). Such a tool is not retried.
   */
  fatal?: boolean | undefined;
  /**
   * Names of arguments that are secrets (compared without case, `-` or `_`): redacted in inspection frames, events
   * and arguments echoed in error results. The tool itself gets the real values.
   */
  secret?: string[] | undefined;
  /**
   * A person must approve each call before it runs: `true`, or a function of the (validated) arguments deciding per
   * call. The run pauses in its `awaitingApproval` state, persisted with the session, until
   * `session.approve(callId)` or `session.reject(callId, reason)` (from any process sharing the store); a rejected
   * call's reason goes back to the model. A function that throws counts as "needs approval".
   */
  needsApproval?: boolean | ApprovalPredicate<z.output<TSchema>> | undefined;
  /**
   * A circuit breaker for this tool, shared by every run of the process (by tool name): each failed attempt counts;
   * once it opens, calls are answered at once with an error result the model reads ("unavailable, try later"),
   * without running the tool, until a probe call after the cool-down succeeds. State changes are `breaker` events.
   */
  breaker?: BreakerOptions | undefined;
}

/** Decides whether one call needs a person's approval. */
export type ApprovalPredicate<TArgs> = (
  args: TArgs,
  context: ApprovalCheckContext,
) => boolean | Promise<boolean>;

/** The predicate as a tool holds it: a method type, so typed tools stay assignable to `Tool` (like `execute`). */
type StoredApprovalPredicate<TArgs> = {
  check(args: TArgs, context: ApprovalCheckContext): boolean | Promise<boolean>;
}['check'];

/** What an approval predicate knows about the call. */
export type ApprovalCheckContext = Pick<
  ToolContext,
  'context' | 'sessionId' | 'agent' | 'callId' | 'route' | 'turn' | 'step'
>;

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

const toolOptionKeys: readonly string[] = [
  'contextType',
  'needsApproval',
  'name',
  'description',
  'input',
  'execute',
  'timeoutMs',
  'maxRetries',
  'fatal',
  'secret',
  'breaker',
];

/**
 * Defines a zod-typed tool. Throws a ConfigError for a bad name (including names of Object.prototype members such
 * as `constructor`), a missing description, an input schema that is not a zod object, a missing execute, a
 * misspelled option (`secrets` would leave the secret unprotected), or a retry count or timeout that is not a
 * whole number of attempts or a positive duration.
 */
export function tool<TSchema extends z.ZodType, TResult, TContext = unknown>(
  options: ToolOptions<TSchema, TResult, TContext>,
): Tool<z.output<TSchema>, TResult, TContext> {
  if (!isPlainObject(options)) throw new ConfigError('tool(): options must be an object.');
  const where = `tool(${JSON.stringify(options.name)})`;
  if (typeof options.name !== 'string' || !toolNamePattern.test(options.name)) {
    throw new ConfigError(`${where}: name must be 1-64 letters, digits, "_" or "-".`);
  }
  if (isPrototypeName(options.name))
    throw new ConfigError(
      `${where}: "${options.name}" is a built-in property name of JavaScript objects; choose another name.`,
    );
  checkOptionObject(options, toolOptionKeys, where);
  if (typeof options.description !== 'string' || options.description.trim() === '') {
    throw new ConfigError(`${where}: description must be a non-empty string; the model reads it.`);
  }
  if (!(options.input instanceof zod().ZodObject)) {
    throw new ConfigError(
      `${where}: input must be a zod object schema, e.g. z.object({ ... }): tool arguments are a JSON object.`,
    );
  }
  if (typeof options.execute !== 'function') throw new ConfigError(`${where}: execute must be a function.`);
  if (options.contextType !== undefined && options.contextType?.kind !== 'context-type')
    throw new ConfigError(`${where}: contextType must be contextType<YourContext>().`);
  if (options.fatal !== undefined && typeof options.fatal !== 'boolean')
    throw new ConfigError(`${where}: fatal must be a boolean.`);
  if (
    options.secret !== undefined &&
    (!Array.isArray(options.secret) || options.secret.some((name) => typeof name !== 'string' || name === ''))
  ) {
    throw new ConfigError(`${where}: secret must be an array of argument names.`);
  }
  if (
    options.needsApproval !== undefined &&
    typeof options.needsApproval !== 'boolean' &&
    typeof options.needsApproval !== 'function'
  )
    throw new ConfigError(`${where}: needsApproval must be a boolean or a function of the arguments.`);
  const { timeoutMs, maxRetries } = options;
  if (
    maxRetries !== undefined &&
    (typeof maxRetries !== 'number' || !Number.isInteger(maxRetries) || maxRetries < 0)
  )
    throw new ConfigError(`${where}: maxRetries must be an integer >= 0, got ${describeValue(maxRetries)}.`);
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
  )
    throw new ConfigError(
      `${where}: timeoutMs must be a positive number of milliseconds, got ${describeValue(timeoutMs)}.`,
    );
  const breaker = options.breaker === undefined ? undefined : checkBreakerOptions(options.breaker, where);
  return {
    kind: 'tool',
    name: options.name,
    description: options.description,
    input: options.input as z.ZodType<z.output<TSchema>>,
    parameters: toJsonSchema(options.input, where),
    timeoutMs: options.timeoutMs,
    maxRetries: options.fatal ? 0 : options.maxRetries,
    fatal: options.fatal ?? false,
    secret: Object.freeze([...(options.secret ?? [])]),
    needsApproval: options.needsApproval ?? false,
    execute: options.execute,
    ...(breaker ? { breaker } : {}),
  };
}

/**
 * JSON Schema for a zod schema, without the `$schema` key that some providers reject. With `jsonOnly`, a schema
 * that JSON cannot satisfy anywhere inside (`z.date()`, `z.bigint()`, `z.map()`, `z.custom()`...) is a ConfigError:
 * a model writes JSON, so such an output schema could never decode, and each attempt would be a paid call.
 */
export function toJsonSchema(schema: z.ZodType, where: string, jsonOnly = false): JsonObject {
  try {
    const { $schema: _ignored, ...rest } = zod().toJSONSchema(schema, {
      io: 'input',
      unrepresentable: jsonOnly ? 'throw' : 'any',
    }) as Record<string, unknown>;
    return rest as JsonObject;
  } catch (error) {
    throw new ConfigError(
      jsonOnly
        ? `${where}: the output schema asks for a value JSON cannot carry (${(error as Error).message}); a model answers in JSON, so use JSON types (for a date, z.iso.datetime()).`
        : `${where}: the schema cannot be expressed as JSON Schema: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
