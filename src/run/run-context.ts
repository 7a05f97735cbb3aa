/**
 * The run context: a value the caller hands to a run, a session or a turn (a database client, the user's id and
 * roles, a tenant, feature flags) that tools, instruction functions, guardrails and permission policies receive,
 * typed. It is dependency injection, not conversation: it never reaches the model, events, the store or the
 * inspector (it may hold clients and secrets), and a restored or recovered session needs it given again.
 */

/**
 * Declares the context type an agent or a tool needs: `contextType<AppContext>()`. It holds nothing at run time; it
 * only tells TypeScript what `ctx.context` is, so that running the agent with a context of another type is a
 * compile error.
 */
export interface ContextType<TContext> {
  readonly kind: 'context-type';
  /** Never set: it carries the type. */
  readonly type?: TContext | undefined;
}

const contextTypeMarker: ContextType<never> = Object.freeze({ kind: 'context-type' });

/** The marker of a context type, for `defineAgent({ contextType })` and `tool({ contextType })`. */
export function contextType<TContext>(): ContextType<TContext> {
  return contextTypeMarker as ContextType<TContext>;
}

/** What instruction functions, guardrails and permission policies know about the run they decide for. */
export interface RunContextInfo<TContext = unknown> {
  /** The caller's context (`run(agent, input, { context })`, `spawn(...)`, `session.send(...)`). */
  readonly context: TContext;
  /** The session's id as the user gave it (or the run's `sessionId`). */
  readonly sessionId: string;
  /** Name of the agent running. */
  readonly agent: string;
  /** Where the agent runs in the session (its name, or `caller>callId/name` for an agent used as a tool). */
  readonly route: string;
  /** The session turn (from 1); 1 in a plain run. */
  readonly turn: number;
}

/**
 * An agent's system prompt: a string, or a function of the run context computed before each model call. Declared as
 * a method type so agents with a context stay assignable to agent lists (`Agent<unknown>[]`).
 */
export type Instructions<TContext> =
  | string
  | {
      build(info: RunContextInfo<TContext>): string | Promise<string>;
    }['build'];

/** Whether a run of an agent with this context type may omit `context` (no context declared, or one that may be undefined). */
type ContextIsOptional<TContext> = unknown extends TContext
  ? true
  : undefined extends TContext
    ? true
    : false;

/**
 * The options argument of an entry point (run, stream, spawn, restore) for an agent of context type `TContext`:
 * optional with `context?` when the agent needs no context, required with `context` when it does.
 */
export type OptionsWithContext<TOptions, TContext> =
  ContextIsOptional<TContext> extends true
    ? [options?: TOptions & { context?: TContext | undefined }]
    : [options: TOptions & { context: TContext }];
