import { canonicalHash } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';

/**
 * Same tool and same canonical arguments give the same signature, whatever the key order. Pure and cheap (about a
 * microsecond for small arguments): a memo keyed by call object (a WeakMap) cost more than it saved, since every
 * entry is an ephemeron the garbage collector must trace.
 */
export function toolCallSignature(call: Pick<ToolCall, 'name' | 'args'>): string {
  return `${call.name}#${canonicalHash(call.args)}`;
}

/**
 * The signatures of a turn's calls, in call order. The duplicate policy asks for them when it decides on a response,
 * and the machine again when it counts the calls that ran, with the same (immutable) array of calls: the last
 * answer is kept in one slot, so the usual step hashes each call's arguments once. One slot, not a WeakMap: it costs
 * the collector nothing and holds at most one turn's calls.
 */
export function toolCallSignatures(calls: readonly Pick<ToolCall, 'name' | 'args'>[]): readonly string[] {
  if (last?.calls === calls) return last.signatures;
  const signatures = new Array<string>(calls.length);
  // toolCallSignature, written out: a function the step calls once is compiled on its own while the step warms up.
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as Pick<ToolCall, 'name' | 'args'>;
    signatures[i] = `${call.name}#${canonicalHash(call.args)}`;
  }
  last = { calls, signatures };
  return signatures;
}

let last: { calls: readonly Pick<ToolCall, 'name' | 'args'>[]; signatures: readonly string[] } | undefined;
