import type { Message } from '../core/messages.ts';
import { zod } from '../core/zod.ts';
import { type Tool, tool } from '../tools/tool.ts';

/** A handoff target: an agent, or the name of an agent the session can find (lets two agents hand off to each other). */
export interface HandoffAgentRef {
  readonly kind: 'agent';
  readonly name: string;
  readonly description: string;
}
export type HandoffTarget = HandoffAgentRef | string;

/** What the target of a handoff sees: by default the whole conversation so far. */
export type HandoffInputFilter = (input: {
  history: readonly Message[];
  from: string;
  to: string;
}) => readonly Message[];

export const defaultMaxHandoffDepth = 5;
export const defaultMaxHandoffRevisits = 1;

/** `transfer_to_<target>`, with the characters tool names may not hold replaced by `_`. */
export function handoffToolName(target: string): string {
  return `transfer_to_${target.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
}

export function targetName(target: HandoffTarget): string {
  return typeof target === 'string' ? target : target.name;
}

/** A handoff tool: `handoffTo` is the name of the agent it hands the conversation to. */
export type HandoffTool = Tool & { readonly handoffTo: string };

/** Whether a tool hands the conversation off (made by handoffTool) rather than running anything. */
export function isHandoffTool(found: Tool | undefined): found is HandoffTool {
  return found !== undefined && Object.hasOwn(found, 'handoffTo');
}

/**
 * One tool per handoff target, shown to the model like any other tool. A call to it passes the tool gate like any
 * call (its arguments are checked, the permission policy is asked, a person may have to approve); its `execute`
 * never runs: once the call is let through, the agent machine ends in `handingOff` and the session answers it.
 */
export function handoffTool(target: HandoffTarget): HandoffTool {
  const name = targetName(target);
  const about = typeof target === 'string' || target.description === '' ? '' : ` ${target.description}`;
  const created = tool({
    name: handoffToolName(name),
    description: `Hand the conversation over to the agent "${name}", which answers the user from here on.${about}`,
    input: zod().object({ reason: zod().string().optional() }),
    execute: () => `Transferred to ${name}.`,
  });
  return Object.assign(created, { handoffTo: name });
}
