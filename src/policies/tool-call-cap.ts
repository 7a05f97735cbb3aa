import { countOf } from '../core/records.ts';
import type { TerminationPolicy } from './decision.ts';

/**
 * Per-tool total call cap: wraps another policy and ends the run when running this turn's calls would take
 * any tool past its cap in the run: `maxToolCallsPerTool` for every tool (`null`: none), lowered for single tools by
 * `maxToolCallsByTool`.
 */
export function withToolCallCap(
  base: TerminationPolicy,
  maxToolCallsPerTool: number | null,
  maxToolCallsByTool: Readonly<Record<string, number>> = {},
): TerminationPolicy {
  const named = Object.keys(maxToolCallsByTool).length > 0;
  if (maxToolCallsPerTool === null && !named) return base;
  const capOf = (name: string): number => {
    const own = named && Object.hasOwn(maxToolCallsByTool, name) ? maxToolCallsByTool[name] : undefined;
    return Math.min(maxToolCallsPerTool ?? Number.POSITIVE_INFINITY, own ?? Number.POSITIVE_INFINITY);
  };
  return (response, state) => {
    const decision = base(response, state);
    if (decision.kind !== 'continue_with_tools') return decision;
    // Calls earlier in the turn only matter when it has several: no map for the usual single call.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: a map for a single call is never read (only a cost)
    const thisTurn = decision.calls.length > 1 ? new Map<string, number>() : undefined;
    for (const call of decision.calls) {
      const total = countOf(state.toolCallCounts, call.name) + (thisTurn?.get(call.name) ?? 0) + 1;
      const cap = capOf(call.name);
      if (total > cap) {
        return {
          kind: 'terminate',
          reason: 'tool_call_limit',
          message: `Tool "${call.name}" would be called ${total} times (limit ${cap} per run).`,
        };
      }
      thisTurn?.set(call.name, (thisTurn.get(call.name) ?? 0) + 1);
    }
    return decision;
  };
}
