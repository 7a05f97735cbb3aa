import { countOf } from '../core/records.ts';
import type { TerminationPolicy } from './decision.ts';

/**
 * Per-tool total call cap: wraps another policy and ends the run when running this turn's calls would take
 * any tool past `maxToolCallsPerTool` calls in the run. `null` means unlimited.
 */
export function withToolCallCap(
  base: TerminationPolicy,
  maxToolCallsPerTool: number | null,
): TerminationPolicy {
  if (maxToolCallsPerTool === null) return base;
  return (response, state) => {
    const decision = base(response, state);
    if (decision.kind !== 'continue_with_tools') return decision;
    const thisTurn = new Map<string, number>();
    for (const call of decision.calls) {
      const total = countOf(state.toolCallCounts, call.name) + (thisTurn.get(call.name) ?? 0) + 1;
      if (total > maxToolCallsPerTool) {
        return {
          kind: 'terminate',
          reason: 'tool_call_limit',
          message: `Tool "${call.name}" would be called ${total} times (limit ${maxToolCallsPerTool} per run).`,
        };
      }
      thisTurn.set(call.name, (thisTurn.get(call.name) ?? 0) + 1);
    }
    return decision;
  };
}
