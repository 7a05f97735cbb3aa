import { countOf } from '../core/records.ts';
import type { TerminationPolicy } from './decision.ts';
import { toolCallSignatures } from './tool-call-signature.ts';

/**
 * Duplicate tool-call detection: wraps another policy and, when it decides to run tools, ends the run if a
 * call repeats one that already ran `maxDuplicateToolCalls` times (same tool, same canonical arguments).
 * Repeats within the same turn count too. With the default of 2, a call may run twice; the third identical
 * call ends the run.
 */
export function withDuplicateDetection(
  base: TerminationPolicy,
  maxDuplicateToolCalls: number,
): TerminationPolicy {
  return (response, state) => {
    const decision = base(response, state);
    if (decision.kind !== 'continue_with_tools') return decision;
    // Repeats within the turn only matter when it has several calls: no map for the usual single call.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: a map for a single call is never read (only a cost)
    const seenThisTurn = decision.calls.length > 1 ? new Map<string, number>() : undefined;
    const signatures = toolCallSignatures(decision.calls);
    for (let i = 0; i < decision.calls.length; i++) {
      const call = decision.calls[i] as (typeof decision.calls)[number];
      const signature = signatures[i] as string;
      const count = countOf(state.callSignatures, signature) + (seenThisTurn?.get(signature) ?? 0);
      if (count >= maxDuplicateToolCalls) {
        return {
          kind: 'terminate',
          reason: 'duplicate_tool_call',
          message: `Tool "${call.name}" was called with the same arguments ${count + 1} times (limit ${maxDuplicateToolCalls}).`,
        };
      }
      seenThisTurn?.set(signature, (seenThisTurn.get(signature) ?? 0) + 1);
    }
    return decision;
  };
}
