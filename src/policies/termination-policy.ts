import type { ResolvedLimits } from '../core/limits.ts';
import type { TerminationPolicy } from './decision.ts';
import { withDuplicateDetection } from './duplicate-detection.ts';
import { standardTerminationPolicy } from './standard-termination.ts';
import { withToolCallCap } from './tool-call-cap.ts';

/**
 * The loop's composed policy: the standard table, wrapped by duplicate detection, wrapped by the per-tool cap. The
 * inner wrapper decides first, so an identical repeat is reported as a duplicate even when it would also break the cap.
 */
/** The composed policy per limits object (an agent's resolved limits live as long as the agent). */
const standardPolicies = new WeakMap<object, TerminationPolicy>();

/** The standard composed policy for these limits, built once per limits object. */
export function terminationPolicyFor(
  limits: Pick<ResolvedLimits, 'maxDuplicateToolCalls' | 'maxToolCallsPerTool'> &
    Partial<Pick<ResolvedLimits, 'maxToolCallsByTool'>>,
): TerminationPolicy {
  let policy = standardPolicies.get(limits);
  if (!policy) {
    policy = createTerminationPolicy(limits);
    standardPolicies.set(limits, policy);
  }
  return policy;
}

export function createTerminationPolicy(
  limits: Pick<ResolvedLimits, 'maxDuplicateToolCalls' | 'maxToolCallsPerTool'> &
    Partial<Pick<ResolvedLimits, 'maxToolCallsByTool'>>,
  base: TerminationPolicy = standardTerminationPolicy,
): TerminationPolicy {
  return withToolCallCap(
    withDuplicateDetection(base, limits.maxDuplicateToolCalls),
    limits.maxToolCallsPerTool,
    limits.maxToolCallsByTool,
  );
}
