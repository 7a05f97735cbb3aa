import type { Agent } from '../agent/define-agent.ts';
import type { JsonValue } from '../core/json.ts';
import { setOwn } from '../core/records.ts';
import type { Tool } from '../tools/tool.ts';

/**
 * Argument and field names always treated as secrets, whatever the tools declare. Names are compared normalized
 * (lower case, without `-` and `_`), so `apiKey`, `API_KEY`, `api-key` and `APIKEY` are one name.
 */
export const defaultSecretKeys: readonly string[] = [
  'apiKey',
  'x-api-key',
  'authorization',
  'proxy-authorization',
  'password',
  'secret',
  'client_secret',
  'accessToken',
  'refresh_token',
  'id_token',
  'private_key',
];

export const redacted = '[redacted]';

/** Field names repeat from snapshot to snapshot: their normalized form is kept (bounded, short names only). */
const normalizedKeys = new Map<string, string>();

/** A name as secrets are matched: lower case, without `-` and `_`. */
export function normalizeSecretKey(key: string): string {
  let name = normalizedKeys.get(key);
  if (name === undefined) {
    name = key.toLowerCase().replace(/[-_]/g, '');
    if (key.length <= 64 && normalizedKeys.size < 4096) normalizedKeys.set(key, name);
  }
  return name;
}

/** The normalized secret names: the defaults plus `declared` (a tool's `secret` list, say). */
export function secretKeySet(declared: Iterable<string> = []): ReadonlySet<string> {
  const keys = new Set<string>();
  for (const key of defaultSecretKeys) keys.add(normalizeSecretKey(key));
  for (const key of declared) keys.add(normalizeSecretKey(key));
  return keys;
}

/** Any set of names, normalized once: callers of `redact` may pass names as they wrote them. */
const normalizedSets = new WeakMap<ReadonlySet<string>, ReadonlySet<string>>();

function normalized(keys: ReadonlySet<string>): ReadonlySet<string> {
  let set = normalizedSets.get(keys);
  if (!set) {
    set = new Set([...keys].map(normalizeSecretKey));
    normalizedSets.set(keys, set);
  }
  return set;
}

/** Deeper than this, a value is replaced whole: a secret must not slip through below a depth limit. */
const maxRedactDepth = 200;

/**
 * A copy of `value` with every property whose name matches one of `keys` (compared normalized: case, `-` and `_`
 * ignored) replaced by "[redacted]", at any depth. Raw tool-call arguments (a string under `args` or `arguments`,
 * when the model's JSON did not parse) are scanned for `"key": value` pairs too. Plain objects and arrays are
 * copied; anything else (class instances) is kept as is, and actor refs are handed to `wrapRef` when given.
 */
export function redact(
  value: unknown,
  keys: ReadonlySet<string>,
  wrapRef?: (ref: object) => object,
  maskText?: (text: string) => string,
): unknown {
  return redactAt(value, normalized(keys), 0, wrapRef, maskText);
}

function redactAt(
  value: unknown,
  keys: ReadonlySet<string>,
  depth: number,
  wrapRef: ((ref: object) => object) | undefined,
  maskText?: (text: string) => string,
): unknown {
  if (typeof value === 'string') return maskText ? maskText(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth > maxRedactDepth) return redacted;
  if (Array.isArray(value)) return value.map((item) => redactAt(item, keys, depth + 1, wrapRef, maskText));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    return wrapRef && typeof (value as { getSnapshot?: unknown }).getSnapshot === 'function'
      ? wrapRef(value)
      : value;
  }
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const name = normalizeSecretKey(key);
    const safe = keys.has(name)
      ? redacted
      : typeof inner === 'string' && (name === 'args' || name === 'arguments')
        ? redactAt(redactText(inner, keys), keys, depth + 1, wrapRef, maskText)
        : redactAt(inner, keys, depth + 1, wrapRef, maskText);
    setOwn(copy, key, safe);
  }
  return copy;
}

/**
 * `"key": value` and `key=value` pairs in text; a quoted value may be cut off (arguments truncated mid-string). The
 * text is the model's, so the pattern must stay linear: a key starts only where no key character precedes it, and
 * is taken whole (a lookahead capture matched again by reference, which never backtracks into the key), so a long
 * run of letters without a colon costs one pass instead of one pass per letter.
 */
const pairPattern =
  /(?<![\w$-])(["']?)(?=([\w$-]+))\2\1(\s*[:=]\s*)("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|[^\s,;&}\]]+)/g;

/**
 * Text with the value of every `"key": value` (or `key=value`) pair whose key is a secret replaced by "[redacted]":
 * for arguments that are not valid JSON, which the model may still have filled with a secret.
 */
export function redactText(text: string, keys: ReadonlySet<string>): string {
  if (!text.includes(':') && !text.includes('=')) return text;
  const names = normalized(keys);
  return text.replace(pairPattern, (whole, quote: string, key: string, separator: string, value: string) =>
    names.has(normalizeSecretKey(key))
      ? `${quote}${key}${quote}${separator}${value.startsWith('"') ? `"${redacted}"` : redacted}`
      : whole,
  );
}

/** Tool-call arguments as events and error messages may show them: secrets replaced, the rest kept. */
export function redactArgs(args: JsonValue, keys: ReadonlySet<string>): JsonValue {
  return typeof args === 'string' ? redactText(args, keys) : (redact(args, keys) as JsonValue);
}

/** The argument names an agent's tools declare secret, including those of agents it uses as tools. */
export function secretArguments(agent: Agent<unknown>, seen = new Set<Agent<unknown>>()): string[] {
  if (seen.has(agent)) return [];
  seen.add(agent);
  return agent.tools.names.flatMap((name) => {
    const found = agent.tools.find(name) as (Tool & { delegate?: Agent<unknown> }) | undefined;
    if (!found) return [];
    return [...found.secret, ...(found.delegate ? secretArguments(found.delegate, seen) : [])];
  });
}

/** Each agent's secret names (defaults included), built once per agent. */
const agentSecrets = new WeakMap<object, ReadonlySet<string>>();

export function secretKeysOf(agent: Agent<unknown>): ReadonlySet<string> {
  let keys = agentSecrets.get(agent);
  if (!keys) {
    keys = secretKeySet(secretArguments(agent));
    agentSecrets.set(agent, keys);
  }
  return keys;
}

/** The data of a `tool_call` event: the tool gets the real arguments, listeners get them with secrets redacted. */
export function toolCallEventData(
  call: { id: string; name: string; args: JsonValue },
  keys: ReadonlySet<string>,
): { callId: string; name: string; args: JsonValue } {
  return { callId: call.id, name: call.name, args: redactArgs(call.args, keys) };
}

/** A JSON key in streamed argument text: `"name":`. */
const streamedKey = /"([^"\\]{1,64})"\s*:/g;

/**
 * Streamed tool-call arguments as listeners see them (`tool_call_delta` events): once a secret key shows up in a
 * call's streamed arguments, the rest of that call's argument text is withheld (the call itself, redacted, comes
 * in its `tool_call` event). Returns the text to show for each delta of call `index` ('' when withheld).
 */
export function streamedArgumentsGuard(keys: ReadonlySet<string>): (index: number, text: string) => string {
  const names = normalized(keys);
  const calls = new Map<number, { tail: string; withheld: boolean }>();
  return (index, text) => {
    let call = calls.get(index);
    if (!call) {
      call = { tail: '', withheld: false };
      calls.set(index, call);
    }
    if (call.withheld) return '';
    // Keys can be split across deltas: look at what came just before too.
    const scan = call.tail + text;
    for (const match of scan.matchAll(streamedKey)) {
      if (names.has(normalizeSecretKey(match[1] as string))) {
        call.withheld = true;
        return '';
      }
    }
    call.tail = scan.slice(-96);
    return text;
  };
}
