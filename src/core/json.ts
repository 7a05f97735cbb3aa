/** A value that survives `JSON.stringify` / `JSON.parse` unchanged: what machine context and events may hold. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export type JsonObject = { [key: string]: JsonValue };

/**
 * Deterministic JSON: object keys sorted at every depth, so two argument objects that differ only in key order
 * produce the same text. Used for duplicate detection and idempotency keys.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  // Plain loops and one growing string: this runs for every tool call (duplicate detection), and the
  // filter/map/join version allocated three arrays and two closures per object.
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++)
      text += i === 0 ? canonicalJson(value[i]) : `,${canonicalJson(value[i])}`;
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = sortedKeys(Object.keys(record));
  let text = '{';
  let first = true;
  for (const key of keys) {
    const child = record[key];
    if (child === undefined) continue;
    text += `${first ? '' : ','}${quotedKey(key)}:${canonicalJson(child)}`;
    first = false;
  }
  return `${text}}`;
}

/**
 * Sorts in place. Tool arguments have a handful of keys: an insertion sort of those allocates nothing, where
 * Array.prototype.sort allocates a work array (about 800 bytes per call here, measured with V8's sampling heap profiler).
 */
function sortedKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** Argument names repeat from call to call: their JSON form is kept (bounded, short names only). */
const quotedKeys = new Map<string, string>();

function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (key.length <= 64 && quotedKeys.size < 4096) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/**
 * 60-bit FNV-1a style hash of a string, as base-36 text (two 30-bit halves: V8 prints small integers in radix 36
 * fast, a 53-bit double slowly). Pure; collisions are negligible at loop scale.
 */
export function hashText(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    h1 = imul(h1 ^ c, 0x01000193);
    h2 = imul(h2 ^ c, 0x5bd1e995);
  }
  return `${(h2 & 0x3fffffff).toString(36)}.${(h1 & 0x3fffffff).toString(36)}`;
}

/**
 * `Math.imul`, read once: before V8 optimizes the hash loops, looking up `Math` and its `imul` at every character
 * costs about as much as the rest of the loop.
 */
const imul = Math.imul;

/**
 * `hashText(canonicalJson(value))`, computed without building the canonical text: the value is walked in the same
 * order and its characters hashed as they come. Duplicate detection hashes every tool call's arguments, and the text
 * (pieces joined, then flattened for hashing) was most of what a signature allocated.
 */
export function canonicalHash(value: unknown): string {
  // The running hash lives in two module variables (no object per hash); a nested call keeps the outer one's.
  const outer1 = h1;
  const outer2 = h2;
  h1 = 0x811c9dc5;
  h2 = 0x01000193;
  try {
    hashCanonical(value);
    return `${(h2 & 0x3fffffff).toString(36)}.${(h1 & 0x3fffffff).toString(36)}`;
  } finally {
    h1 = outer1;
    h2 = outer2;
  }
}

let h1 = 0;
let h2 = 0;

// The hash steps are written out where they are used, not called per character, and run on locals: a tool step
// runs these before V8 optimizes them, and then each call or module variable access costs more than the step itself.

function hashChars(text: string): void {
  let a = h1;
  let b = h2;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    a = imul(a ^ c, 0x01000193);
    b = imul(b ^ c, 0x5bd1e995);
  }
  h1 = a;
  h2 = b;
}

/** A string as JSON writes it: quoted as it is, unless a character needs escaping (then JSON.stringify's text). */
function hashString(text: string): void {
  let a = imul(h1 ^ 34, 0x01000193);
  let b = imul(h2 ^ 34, 0x5bd1e995);
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 34 || c === 92 || (c >= 0xd800 && c <= 0xdfff)) {
      hashChars(JSON.stringify(text));
      return;
    }
    a = imul(a ^ c, 0x01000193);
    b = imul(b ^ c, 0x5bd1e995);
  }
  h1 = imul(a ^ 34, 0x01000193);
  h2 = imul(b ^ 34, 0x5bd1e995);
}

/** One character of punctuation (`{`, `,`, `[`...) into the running hash: no string and no loop for it. */
function hashCode(c: number): void {
  h1 = imul(h1 ^ c, 0x01000193);
  h2 = imul(h2 ^ c, 0x5bd1e995);
}

/**
 * Hashes what canonicalJson writes for `value`, in the same order. Each member's key is hashed as a string (its
 * quotes with it, as JSON writes it) and then its `:`, punctuation a character at a time, a digit as itself: a step
 * hashes a call's arguments before V8 optimizes this, when each call and loop costs more than the characters it
 * hashes. The keys go through the same loop as string values, not a quoted copy of each key looked up in a table
 * and hashed by a loop of its own: one lookup less per member, and one hot loop instead of two for V8 to compile.
 */
function hashCanonical(value: unknown): void {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string') hashString(value);
    else if (typeof value === 'number') {
      if (value >= 0 && value <= 9 && Number.isInteger(value)) hashCode(48 + value);
      else hashChars(Number.isFinite(value) ? String(value) : 'null');
    } else if (typeof value === 'boolean') hashChars(value ? 'true' : 'false');
    else hashChars(canonicalJson(value));
    return;
  }
  if (Array.isArray(value)) {
    hashCode(91); // [
    if (value.length > 0) hashCanonical(value[0]);
    for (let i = 1; i < value.length; i++) {
      hashCode(44); // ,
      hashCanonical(value[i]);
    }
    hashCode(93); // ]
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = sortedKeys(Object.keys(record));
  hashCode(123); // {
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const child = record[key];
    if (child === undefined) continue;
    if (!first) hashCode(44); // ,
    first = false;
    hashString(key);
    hashCode(58); // :
    hashCanonical(child);
  }
  hashCode(125); // }
}

/**
 * How deep plain JSON may nest here. Arguments a model writes are a few levels deep; thousands of levels would
 * overflow the stack of every recursive step that follows (hashing for duplicate detection, JSON.stringify,
 * schema validation), failing the run instead of telling the model.
 */
export const maxJsonDepth = 100;

/**
 * Why `value` is not plain JSON (a cycle, a function, a bigint, a symbol, a non-finite number, a class instance
 * other than Array, nesting deeper than `maxJsonDepth`), or undefined when it is. Providers' parsed arguments
 * pass unless absurdly deep; a user's own provider may hand over anything, and the loop hashes and serializes
 * arguments, so they are checked once on arrival.
 */
export function plainJsonProblem(value: unknown, ancestors?: unknown[]): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `the number ${value} is not JSON`;
    case 'object': {
      if (value === null) return undefined;
      if (ancestors?.includes(value)) return 'the value contains a cycle';
      if (ancestors !== undefined && ancestors.length >= maxJsonDepth)
        return `the value nests deeper than ${maxJsonDepth} levels`;
      const proto = Object.getPrototypeOf(value);
      const isArray = Array.isArray(value);
      if (!isArray && proto !== Object.prototype && proto !== null)
        return `a ${proto?.constructor?.name ?? 'class'} instance is not JSON`;
      // Arguments are checked for every tool call: the list of ancestors is made only for a value with an object
      // inside, and an object's members are read in place (no array of its values).
      let path = ancestors;
      if (isArray) {
        for (let i = 0; i < value.length; i++) {
          const child: unknown = value[i];
          if (isScalar(child)) {
            if (typeof child === 'number' && !Number.isFinite(child))
              return `the number ${child} is not JSON`;
            continue;
          }
          path ??= [];
          path.push(value);
          const problem = plainJsonProblem(child, path);
          path.pop();
          if (problem !== undefined) return problem;
        }
        return undefined;
      }
      const record = value as Record<string, unknown>;
      for (const key in record) {
        if (!Object.hasOwn(record, key)) continue;
        const child = record[key];
        if (isScalar(child)) {
          if (typeof child === 'number' && !Number.isFinite(child)) return `the number ${child} is not JSON`;
          continue;
        }
        path ??= [];
        path.push(value);
        const problem = plainJsonProblem(child, path);
        path.pop();
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    default:
      return `a ${typeof value} is not JSON`;
  }
}

/** A string, boolean, number or null: JSON by itself (a number when finite), nothing inside to check. */
function isScalar(value: unknown): boolean {
  return (
    value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
  );
}
