import { canonicalJson, hashText } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';

/**
 * Signatures already computed, per call object. The duplicate-detection policy and the machine's bookkeeping both
 * sign every call of a response, and calls are never mutated (history is immutable), so the second lookup is free.
 * A WeakMap keeps this a pure function of its argument and lets finished runs' calls be collected.
 */
const signatures = new WeakMap<object, string>();

/** Same tool and same canonical arguments give the same signature, whatever the key order. */
export function toolCallSignature(call: Pick<ToolCall, 'name' | 'args'>): string {
  const known = signatures.get(call);
  if (known !== undefined) return known;
  const signature = `${call.name}#${hashText(canonicalJson(call.args))}`;
  signatures.set(call, signature);
  return signature;
}
