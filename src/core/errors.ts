import type { StopReason } from './stop-reason.ts';

/**
 * Named error classes. Errors that reach the caller as exceptions are for bad input (a wrong definition, an
 * invalid history); everything that goes wrong during a run becomes a stop reason and a serializable
 * `ErrorInfo` in the result instead, whose `name` is the name of the class below it stands for.
 */
export class TroupeError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An agent, tool or option is defined wrongly. Thrown at definition time, before anything runs. */
export class ConfigError extends TroupeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('config_invalid', message, options);
  }
}

/** Two tools of one agent share a name. */
export class DuplicateToolError extends TroupeError {
  readonly toolName: string;
  constructor(toolName: string) {
    super(
      'tool_duplicate',
      `Tool "${toolName}" is defined twice; tool names must be unique within an agent.`,
    );
    this.toolName = toolName;
  }
}

/** A tool name was looked up that the registry does not hold. */
export class UnknownToolError extends TroupeError {
  readonly toolName: string;
  constructor(toolName: string, known: readonly string[]) {
    super(
      'tool_unknown',
      `Unknown tool "${toolName}". Available tools: ${known.length > 0 ? known.join(', ') : '(none)'}.`,
    );
    this.toolName = toolName;
  }
}

export interface HistoryIssue {
  /** Index of the offending message in the history. */
  index: number;
  message: string;
}

/** A history breaks the conversation rules. Lists every problem found, not just the first. */
export class HistoryValidationError extends TroupeError {
  readonly issues: readonly HistoryIssue[];
  constructor(issues: readonly HistoryIssue[]) {
    super(
      'history_invalid',
      `Invalid history: ${issues.map((issue) => `[${issue.index}] ${issue.message}`).join('; ')}`,
    );
    this.issues = issues;
  }
}

export type ModelErrorKind =
  | 'rate_limited'
  | 'overloaded'
  | 'server'
  | 'timeout'
  | 'network'
  | 'truncated_stream'
  | 'authentication'
  | 'bad_request'
  | 'not_found'
  | 'invalid_response'
  /** A scripted model (troupe/testing) was called past its last turn. */
  | 'script_exhausted'
  | 'unknown'
  /** The model's circuit breaker is open after repeated failures: the call failed at once, without being sent. */
  | 'circuit_open';

/** A model call failed after the provider's own retries. */
export class ModelError extends TroupeError {
  readonly kind: ModelErrorKind;
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** Milliseconds the provider asked us to wait (retry-after), when it said. */
  readonly retryAfterMs: number | undefined;
  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { status?: number; retryable?: boolean; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(`model_${kind}`, message, { cause: options.cause });
    this.kind = kind;
    this.status = options.status;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A tool outlived its timeout and was aborted through its signal. */
export class ToolTimeoutError extends TroupeError {
  constructor(toolName: string, timeoutMs: number) {
    super('tool_timeout', `Tool "${toolName}" timed out after ${timeoutMs} ms.`);
  }
}

/**
 * A limit or a policy ended the run (max_steps, duplicate_tool_call, guardrail_blocked, handoff_limit, timed_out,
 * aborted, ...); its `code` is the stop reason. A run never throws it: its result's `error` is the serializable form,
 * `{ name: 'RunStopped', code, message }` (narrow one with `RunStopped.is`). Throw one yourself to turn a run that
 * did not complete into an exception: `throw RunStopped.from(result.error)`.
 */
export class RunStopped extends TroupeError {
  declare readonly code: StopReason;
  constructor(stopReason: StopReason, message: string, options?: { cause?: unknown }) {
    super(stopReason, message, options);
  }

  /** Whether an error from a result says that a limit or policy stopped the run; narrows `code` to a stop reason. */
  static is(error: ErrorInfo | undefined): error is RunStoppedInfo {
    return error?.name === 'RunStopped';
  }

  /** The exception for a result's error that `RunStopped.is` accepts. */
  static from(error: RunStoppedInfo): RunStopped {
    return new RunStopped(error.code, error.message);
  }
}

/**
 * The names `ErrorInfo.name` takes: an exported error class (RunStopped, ModelError, ConfigError,
 * ToolTimeoutError, SubAgentError, ...), one of the runtime's own kinds (`ResourceError` for a model call the
 * resource manager denied, `FatalToolError` for a tool defined `fatal: true` that failed, `InternalError` for a bug
 * of ours, `AbortError`), or whatever name an error thrown by a tool or a custom provider had.
 */
export type ErrorName =
  | 'RunStopped'
  | 'ModelError'
  | 'ConfigError'
  | 'ToolTimeoutError'
  | 'SubAgentError'
  | 'ResourceError'
  | 'FatalToolError'
  | 'InternalError'
  | 'AbortError'
  | 'TroupeError'
  | 'Error'
  | (string & {});

/**
 * The serializable form of an error, as it appears in results, events and machine context: plain data, not an
 * `Error` instance (a result survives JSON and a store).
 */
export interface ErrorInfo {
  name: ErrorName;
  /** For RunStopped, the stop reason; for ModelError, `model_<kind>` (e.g. `model_rate_limited`). */
  code: string;
  message: string;
}

/** The ErrorInfo of a run that a limit or policy stopped. */
export interface RunStoppedInfo extends ErrorInfo {
  name: 'RunStopped';
  code: StopReason;
}

export function toErrorInfo(error: unknown): ErrorInfo {
  if (error instanceof TroupeError) return { name: error.name, code: error.code, message: error.message };
  if (error instanceof Error) {
    const name = error.name || 'Error';
    return { name, code: name === 'AbortError' ? 'aborted' : 'error', message: error.message };
  }
  return { name: 'Error', code: 'error', message: typeof error === 'string' ? error : safeString(error) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Thrown by a tool whose arguments were well-formed but cannot be acted on: an expression that divides by zero, a
 * query that writes or runs too long. The model reads the message as the call's error result and can correct itself:
 * the call is not retried (the same arguments would fail the same way) and the tool stays available for the rest of
 * the run, unlike a tool that keeps failing.
 */
export class ToolInputError extends TroupeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('tool_input_rejected', message, options);
  }
}
