import type { ToolContext } from '../tools/tool.ts';
import type { RunRuntime } from './run-runtime.ts';

/**
 * The context a tool receives for one attempt of one call, as a run makes it. The run it belongs to (which agents
 * used as tools find their caller through) is a private field: nothing for JSON, object spreads or console output
 * to show, and nothing to define per call (defining a hidden property on each context cost about as much as the
 * rest of the object).
 */
export class ToolCallContext implements ToolContext {
  // The public fields are declared, not defined: the constructor sets each once, in this order (a defined field is
  // set twice per object: by a field initializer, then by the constructor; one of these is made per call).
  declare readonly context: unknown;
  declare signal: AbortSignal;
  declare readonly sessionId: string;
  declare readonly route: string;
  declare readonly turn: number;
  declare readonly agent: string;
  declare readonly callId: string;
  declare readonly step: number;
  declare readonly attempt: number;
  declare readonly idempotencyKey: string;
  readonly #caller: RunRuntime | undefined;

  constructor(
    place: {
      context?: unknown;
      signal: AbortSignal;
      sessionId: string;
      route: string;
      turn: number;
      agent: string;
      step: number;
      /** Ids of the calls that started this (nested) run, joined by '/', or '' at the top. */
      callPath: string;
      /** `${sessionId}:${turn}:`, when the place keeps it made (a run's steps share it). */
      keyPrefix?: string | undefined;
    },
    callId: string,
    attempt: number,
    caller: RunRuntime | undefined,
  ) {
    this.context = place.context;
    this.signal = place.signal;
    this.sessionId = place.sessionId;
    this.route = place.route;
    this.turn = place.turn;
    this.agent = place.agent;
    this.callId = callId;
    this.step = place.step;
    this.attempt = attempt;
    // A pure function of where the call sits in the session (see ToolContext.idempotencyKey).
    const callPath = place.callPath;
    // Each piece joined makes a string of its own (the session id is too long to copy): the run's part made once
    // saves two per call.
    const prefix = place.keyPrefix ?? `${place.sessionId}:${place.turn}:`;
    this.idempotencyKey = `${prefix}${place.step}:${callPath === '' ? callId : `${callPath}/${callId}`}`;
    this.#caller = caller;
  }

  /** The run that made `context`, when it is a ToolCallContext; undefined otherwise. */
  static callerOf(context: object): RunRuntime | undefined {
    return #caller in context ? (context as ToolCallContext).#caller : undefined;
  }
}
