import type { Context, RestatePromise } from '@restatedev/restate-sdk';
import { CancelledError, serde } from '@restatedev/restate-sdk';
import { type ErrorInfo, toErrorInfo } from '../core/errors.ts';
import type { AgentEvent, ToolOutcome } from '../machines/agent.ts';
import { type CapturedEvent, captured, type JournalClock, type JournaledBus } from './effect-capture.ts';

export interface JournalSettings {
  /** Attempts of a call whose code throws (a bug: model and tool failures are results), before the run fails. */
  maxEffectRetries: number;
  /** A call's journaled result larger than this is replaced by an error result (Restate refuses 32 MiB). */
  maxJournaledBytes: number;
}

export interface EffectRequest<T> {
  /** The journal entry's name: `<agent>/model/<n>` or `<agent>/tool/<step>/<callId>`. */
  key: string;
  kind: 'model' | 'tool' | 'agent';
  effect: () => Promise<T>;
  /** Journaled time at which the agent's run times out, or null. */
  deadline: number | null;
}

/** How the turn hears what became of an effect that does not return to the agent. */
export interface EffectListener {
  clock: JournalClock;
  bus: JournaledBus;
  /** Awaits a journal promise (see JournalAwaits). */
  wait<R>(promise: RestatePromise<R>): Promise<R>;
  /** The agent's deadline passed (before or during the call): it must stop with `timed_out`. */
  timedOut(): void;
  /** The call threw on every attempt: the agent's run fails with this error. */
  failed(error: ErrorInfo): void;
  /** The invocation was cancelled. */
  cancelled(): void;
}

/** What the journal keeps of one call: its result, the events it emitted, when it ended. */
interface JournaledResult<T> {
  value?: T;
  events: CapturedEvent[];
  at: number;
  timedOut?: true;
}

const timedOut: unique symbol = Symbol('timed out');

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/**
 * Runs one model or tool call as a `ctx.run` journal entry. A call whose result is in the journal is not made
 * again: its result, the events it emitted and its end time come back from the journal. The agent's deadline is
 * checked against journaled time before the call and raced inside it (the race's outcome is journaled too), so a
 * replay decides the same way. Never rejects: a timeout, a failure or a cancellation goes to `listener`, and the
 * returned promise then stays pending (the agent stops and drops it).
 */
export async function journaledEffect<T>(
  ctx: Context,
  request: EffectRequest<T>,
  settings: JournalSettings,
  listener: EffectListener,
): Promise<T> {
  const { deadline } = request;
  if (deadline !== null && listener.clock.now() >= deadline) {
    listener.timedOut();
    return never();
  }
  let recorded: JournaledResult<T>;
  try {
    recorded = await listener.wait(
      ctx.run(request.key, () => runEffect(request, settings), {
        maxRetryAttempts: settings.maxEffectRetries,
        serde: serde.json,
      }),
    );
  } catch (error) {
    if (error instanceof CancelledError) listener.cancelled();
    else {
      const info = toErrorInfo(error);
      listener.failed({
        name: 'EffectError',
        code: 'effect_failed',
        message: `${request.key} failed after ${settings.maxEffectRetries} attempt(s): ${info.message}`,
      });
    }
    return never();
  }
  listener.clock.advance(recorded.at);
  listener.bus.replay(recorded.events);
  if (recorded.timedOut) {
    listener.timedOut();
    return never();
  }
  return recorded.value as T;
}

/** The body of the journal entry: the call, raced against the deadline, with the events it emitted. */
async function runEffect<T>(
  request: EffectRequest<T>,
  settings: JournalSettings,
): Promise<JournaledResult<T>> {
  const remaining = request.deadline === null ? null : request.deadline - Date.now();
  if (remaining !== null && remaining <= 0) return { events: [], at: Date.now(), timedOut: true };
  const { value, events } = await captured(() =>
    remaining === null ? request.effect() : raceDeadline(request.effect(), remaining),
  );
  const at = Date.now();
  if (value === timedOut) return { events, at, timedOut: true };
  const result: JournaledResult<T> = { value, events, at };
  const bytes = Buffer.byteLength(JSON.stringify(result) ?? '');
  if (bytes <= settings.maxJournaledBytes) return result;
  return { value: tooLarge(request, value, bytes, settings.maxJournaledBytes), events, at };
}

function raceDeadline<T>(call: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<typeof timedOut>((resolve) => {
    timer = setTimeout(() => resolve(timedOut), ms);
  });
  return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
}

/**
 * What the agent gets instead of a result too large to journal: a model error, or an error result the model
 * reads (a tool call, or an agent run in-process). Restate would otherwise retry the call forever.
 */
function tooLarge<T>(request: EffectRequest<T>, value: T, bytes: number, limit: number): T {
  const message = `the result of ${request.key} is ${size(bytes)}, over the ${size(limit)} a journal entry may hold here; keep large data outside the conversation and return a reference to it`;
  if (request.kind === 'model')
    return {
      type: 'model.error',
      error: { name: 'JournalLimitError', code: 'result_too_large', message },
    } satisfies AgentEvent as T;
  const outcome = value as ToolOutcome;
  return {
    callId: outcome.callId,
    name: outcome.name,
    content: `Error: ${message}.`,
    isError: true,
    executed: outcome.executed,
    degraded: false,
    attempts: outcome.attempts,
  } satisfies ToolOutcome as T;
}

function size(bytes: number): string {
  return bytes < 1_048_576 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1_048_576).toFixed(1)} MiB`;
}
