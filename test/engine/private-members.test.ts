import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * XState's private members (on actors, systems, snapshots, state nodes and the Actor class) are read only in
 * src/engine, where the runtime check (runtime-gate.ts) requires each of them before the compiled interpreter runs.
 * Anywhere else in src/ a private member, a check on a function's source text or a private field of a snapshot fails
 * this test: move it behind a function of src/engine (actor-links.ts) and add it to the runtime check.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const src = join(root, 'src');

/** Members of XState's runtime objects that are not in its public types. */
const privateMembers = [
  '_relay',
  '_parent',
  '_stop',
  '_processingStatus',
  '_send',
  '_nodes',
  '_sendInspectionEvent',
  '_snapshot',
  '_actorScope',
  '_systemId',
  '_initState',
  '_deferred',
  '_syncSnapshot',
  '_logic',
  '_mailbox',
  '_set',
  '_unregister',
  '_register',
  '_clock',
  '_scheduler',
];

/** A member read or named: `x._relay`, `x?._relay`, `x['_relay']`, `'_relay' in x`, or a key of an object literal. */
const memberUse = new RegExp(
  `(?:\\??\\.|\\[\\s*['"\`]|['"\`])(${privateMembers.join('|')})\\b|\\b(${privateMembers.join('|')})\\s*[?]?:`,
  'g',
);
/** A decision taken on a function's source text, or a private field read straight off a snapshot. */
const otherUses = [
  /\.toString\(\)\s*\.\s*(?:includes|match|test|indexOf)\b/,
  /String\([^)]*prototype/,
  /getSnapshot\(\)\??\._/,
];

/**
 * Uses outside src/engine that are not XState's: Troupe's own inspected actor view has a `_parent` field, named as
 * the Stately inspector reads it, filled from src/engine's parentOf.
 */
const allowed: readonly { file: string; member: string }[] = [
  { file: 'src/run/inspect.ts', member: '_parent' },
];

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each private-member use in `text`, as `member (line n)`. */
function usesIn(text: string, file: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(memberUse)) {
      const member = (match[1] ?? match[2]) as string;
      if (allowed.some((entry) => entry.file === file && entry.member === member)) continue;
      found.push(`${file}:${index + 1} ${member}`);
    }
    for (const pattern of otherUses)
      if (pattern.test(line)) found.push(`${file}:${index + 1} ${line.trim()}`);
  });
  return found;
}

describe("XState's private members", () => {
  it('are used in src/engine only', () => {
    const outside = sourceFiles(src)
      .map((path) => relative(root, path).split('\\').join('/'))
      .filter((file) => !file.startsWith('src/engine/'))
      .flatMap((file) => usesIn(readFileSync(join(root, file), 'utf8'), file));
    expect(outside).toEqual([]);
  });

  it('the scan finds each kind of use', () => {
    expect(usesIn('actor._relay(a, b, c);', 'x.ts')).toEqual(['x.ts:1 _relay']);
    expect(usesIn("const p = actor?._parent;\nif ('_stop' in a) a['_processingStatus'];", 'x.ts')).toEqual([
      'x.ts:1 _parent',
      'x.ts:2 _stop',
      'x.ts:2 _processingStatus',
    ]);
    expect(usesIn('const keys = { _nodes: 1 };', 'x.ts')).toEqual(['x.ts:1 _nodes']);
    expect(usesIn('String(Actor.prototype._send).includes("warn")', 'x.ts')).toHaveLength(2);
    expect(usesIn('fn.toString().includes("x")', 'x.ts')).toHaveLength(1);
    expect(usesIn('actor.getSnapshot()._nodes', 'x.ts')).toHaveLength(2);
    expect(usesIn('(_snapshot, scope) => {}; const _stopped = 1; event._transitions;', 'x.ts')).toEqual([]);
  });

  it('the allowed uses are still there (a stale entry would hide a new use of the same member)', () => {
    for (const { file, member } of allowed)
      expect(readFileSync(join(root, file), 'utf8'), `${file} ${member}`).toMatch(
        new RegExp(`\\b${member}\\b`),
      );
  });
});
