import { canonicalJson, hashText } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';

/** Same tool and same canonical arguments give the same signature, whatever the key order. */
export function toolCallSignature(call: Pick<ToolCall, 'name' | 'args'>): string {
  return `${call.name}#${hashText(canonicalJson(call.args))}`;
}
