import type { ToolCall } from '../core/messages.ts';
import { type NormalizedPermission, normalizePermission } from '../policies/tool-permissions.ts';
import { contextInfoOf, type RunRuntime } from './run-runtime.ts';

/**
 * Asks the agent's permission policy about one call, with the run context. Never throws: a policy that throws or
 * rejects denies the call (fail closed) saying why, and an `ask` where nobody can decide (a run() without
 * onApproval) is a denial too, since the call would otherwise wait forever.
 */
export function checkPermission(
  runtime: RunRuntime,
  call: ToolCall,
): NormalizedPermission | Promise<NormalizedPermission> {
  const policy = runtime.agent.permissions;
  if (!policy) return { decision: 'allow' };
  const settle = (verdict: NormalizedPermission): NormalizedPermission =>
    verdict.decision === 'ask' && runtime.peopleCanDecide !== true
      ? {
          decision: 'deny',
          reason: `the permission policy asks a person${verdict.reason ? ` (${verdict.reason})` : ''}, and nobody can decide in this run: pass onApproval to run() or stream(), or run the agent in a session`,
        }
      : verdict;
  const failed = (error: unknown): NormalizedPermission => ({
    decision: 'deny',
    reason: `the permission policy failed: ${error instanceof Error ? error.message : String(error)}`,
  });
  try {
    const answer = policy({ tool: call.name, args: call.args, callId: call.id }, contextInfoOf(runtime));
    if (answer instanceof Promise) return answer.then((value) => settle(normalizePermission(value)), failed);
    return settle(normalizePermission(answer));
  } catch (error) {
    return failed(error);
  }
}
