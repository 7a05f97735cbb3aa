import type { ResolvedLimits } from '../core/limits.ts';
import type { TerminationPolicy } from './decision.ts';
import { withDuplicateDetection } from './duplicate-detection.ts';
import { standardTerminationPolicy } from './standard-termination.ts';
import { withToolCallCap } from './tool-call-cap.ts';

/**
 * The loop's composed policy: the standard table, wrapped by duplicate detection, wrapped by the per-tool cap. The
 * inner wrapper decides first, so an identical repeat is reported as a duplicate even when it would also break the cap.
 */
export function createTerminationPolicy(
  limits: Pick<ResolvedLimits, 'maxDuplicateToolCalls' | 'maxToolCallsPerTool'>,
  base: TerminationPolicy = standardTerminationPolicy,
): TerminationPolicy {
  return withToolCallCap(
    withDuplicateDetection(base, limits.maxDuplicateToolCalls),
    limits.maxToolCallsPerTool,
  );
}
