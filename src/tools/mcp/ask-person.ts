import { emitFrom, type RunRuntime } from '../../run/run-runtime.ts';

export type Asker = NonNullable<RunRuntime['askPerson']>;

/**
 * Who answers: the session's people (a pending request), else run()'s `onApproval` called directly (a run that
 * has no session to wait in), announced with the same `approval_requested` and `approval_decided` events.
 */
export function askerOf(runtime: RunRuntime): Asker | undefined {
  if (runtime.askPerson !== undefined && runtime.peopleCanDecide === true) return runtime.askPerson;
  const decide = runtime.onApproval;
  if (decide === undefined) return undefined;
  return async (request, _signal, check) => {
    emitFrom(runtime, 'approval_requested', request);
    const decision = await decide(request);
    const refusal = check?.(decision);
    if (refusal !== undefined) throw new Error(`the approval handler's decision does not fit: ${refusal}`);
    emitFrom(runtime, 'approval_decided', { callId: request.callId, tool: request.tool, decision });
    return decision;
  };
}
