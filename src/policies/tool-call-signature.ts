import { canonicalJson, hashText } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';

/**
 * Same tool and same canonical arguments give the same signature, whatever the key order. Pure and cheap (about a
 * microsecond for small arguments): a memo keyed by call object (a WeakMap) cost more than it saved, since every
 * entry is an ephemeron the garbage collector must trace.
 */
export function toolCallSignature(call: Pick<ToolCall, 'name' | 'args'>): string {
  return `${call.name}#${hashText(canonicalJson(call.args))}`;
}
