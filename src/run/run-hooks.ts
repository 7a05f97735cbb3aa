import type { ErrorInfo } from '../core/errors.ts';

/**
 * How an agent's effects reach the session that supervises it without putting functions in machine context: the
 * session registers a handler under the agent's runtime key (`<sessionId>/<agent>`); a fatal tool failure is
 * reported there and the session's supervisor decides (restart, stop, escalate). A plain run has no handler.
 */
const fatalHandlers = new Map<string, (error: ErrorInfo) => void>();

export function onFatal(runtimeKey: string, handler: (error: ErrorInfo) => void): () => void {
  fatalHandlers.set(runtimeKey, handler);
  return () => {
    if (fatalHandlers.get(runtimeKey) === handler) fatalHandlers.delete(runtimeKey);
  };
}

/** Returns whether a session took the failure. */
export function reportFatal(runtimeKey: string, error: ErrorInfo): boolean {
  const handler = fatalHandlers.get(runtimeKey);
  if (!handler) return false;
  handler(error);
  return true;
}

/** What a nested run (agentTool, parallel) inherits from the run that starts it: its deadline and inspector. */
export interface RunScope {
  /** Clock time at which the run times out, or null. */
  deadline: number | null;
  inspect?: import('./inspect.ts').InspectObserver;
}

const scopes = new Map<string, RunScope>();

export function setScope(runtimeKey: string, scope: RunScope): () => void {
  scopes.set(runtimeKey, scope);
  return () => {
    if (scopes.get(runtimeKey) === scope) scopes.delete(runtimeKey);
  };
}

export function scopeOf(runtimeKey: string): RunScope | undefined {
  return scopes.get(runtimeKey);
}

/** Model calls made by nested agents (agentTool) since the caller's last tool batch ended, by runtime key. */
const nestedSteps = new Map<string, number>();

export function addNestedSteps(runtimeKey: string, steps: number): void {
  if (steps > 0) nestedSteps.set(runtimeKey, (nestedSteps.get(runtimeKey) ?? 0) + steps);
}

/** Returns and clears the nested steps recorded for the caller: its effects add them to the batch's answer. */
export function takeNestedSteps(runtimeKey: string): number {
  const steps = nestedSteps.get(runtimeKey);
  if (steps === undefined) return 0;
  nestedSteps.delete(runtimeKey);
  return steps;
}

/** Runs a nested agent (agentTool) as a child of the caller's session actor; the session registers one per agent. */
export type Delegator = (request: {
  agent: import('../agent/define-agent.ts').Agent<unknown>;
  input: string;
  callId: string;
  signal: AbortSignal;
}) => Promise<import('../core/result.ts').RunResult<unknown>>;

const delegators = new Map<string, Delegator>();

export function setDelegator(runtimeKey: string, delegator: Delegator): () => void {
  delegators.set(runtimeKey, delegator);
  return () => {
    if (delegators.get(runtimeKey) === delegator) delegators.delete(runtimeKey);
  };
}

export function delegatorOf(runtimeKey: string): Delegator | undefined {
  return delegators.get(runtimeKey);
}

/**
 * XState issue statelyai/xstate#5153: an actor that errors from its own action leaves its children running
 * (the effects actor's cleanup never runs, so in-flight calls are never aborted). Stop them ourselves; the public
 * API cannot stop a non-root actor, hence the internal `_stop`, which runs the child's normal stop procedure.
 */
export function stopOrphans(failed: { getSnapshot(): unknown }): void {
  const children = (failed.getSnapshot() as { children?: Record<string, unknown> }).children ?? {};
  for (const orphan of Object.values(children)) (orphan as { _stop?: () => void })._stop?.();
}
