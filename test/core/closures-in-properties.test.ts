import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * V8 allocates a function literal stored straight into a property (`o.f = () => x`) in the old generation, as it
 * would a method. Such a closure made per run, call or session keeps everything it closes over (its whole scope)
 * reachable from the old generation after its owner is done, so every young-generation collection copies and
 * promotes it until the next full collection. A closure made in a local first (`const f = () => x; o.f = f`), in an
 * object literal, as a class field or returned by a function is allocated young. This scan fails on a new
 * closure stored straight into a property in src/; the allowed ones below are made once per process or per
 * long-lived connection, or close over nothing.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const src = join(root, 'src');

/**
 * `target.name = (…) =>`, `= async (…) =>`, `= name =>`, `= function`, and the same after `??=`, `||=` or `&&=`;
 * a target ending in `]` or `)` too.
 */
const storedClosure =
  /(?<!typeof\s+[\w$.]*)[\w$\])]\s*\.\s*#?[\w$]+\s*(?:\?\?|\|\||&&)?=\s*(?:async\s*)?(?:function\b|\([^()]*\)\s*(?::[^=;{]+)?=>|[\w$]+\s*=>)/g;

/** Closures stored straight into a property on purpose, by file and property. */
const allowed: readonly { file: string; property: string; why: string }[] = [
  { file: 'src/run/effects.ts', property: 'start', why: 'once per machine' },
  { file: 'src/run/effects.ts', property: 'transition', why: 'once per machine' },
  { file: 'src/restate/turn.ts', property: 'onDelta', why: 'closes over nothing' },
  { file: 'src/tools/mcp/connection.ts', property: 'onerror', why: 'closes over nothing' },
  { file: 'src/tools/mcp/connection.ts', property: 'onclose', why: 'once per connection' },
  { file: 'src/tools/mcp/server.ts', property: 'sampling', why: 'once per server' },
  { file: 'src/tools/mcp/server.ts', property: 'roots', why: 'once per server' },
  { file: 'src/tools/mcp/server.ts', property: 'elicitation', why: 'once per server' },
  { file: 'src/tools/mcp/oauth.ts', property: 'saveClientInformation', why: 'once per provider' },
];

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `text` with its comments blanked, lines kept where they were. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, (comment) => comment.replace(/[^\n]/g, ' '));
}

/** Each closure stored straight into a property in `text`, as `file:line property`. */
function storedClosuresIn(source: string, file: string): string[] {
  const text = withoutComments(source);
  const found: string[] = [];
  for (const match of text.matchAll(storedClosure)) {
    const property = /\.\s*#?([\w$]+)\s*(?:\?\?|\|\||&&)?=/.exec(match[0])?.[1] as string;
    if (allowed.some((entry) => entry.file === file && entry.property === property)) continue;
    const line = text.slice(0, match.index).split('\n').length;
    found.push(`${file}:${line} ${property}`);
  }
  return found;
}

describe('closures stored straight into a property', () => {
  it('are not made per run, call or session in src/', () => {
    const found = sourceFiles(src)
      .map((path) => relative(root, path).split('\\').join('/'))
      .flatMap((file) => storedClosuresIn(readFileSync(join(root, file), 'utf8'), file));
    expect(found).toEqual([]);
  });

  it('the scan finds each form and leaves the young ones', () => {
    expect(storedClosuresIn('o.f = () => a;', 'x.ts')).toEqual(['x.ts:1 f']);
    expect(storedClosuresIn('this.#f = () => {\n};', 'x.ts')).toEqual(['x.ts:1 f']);
    expect(storedClosuresIn('this.#f ??= () => a; o.g ||= (x) => x;', 'x.ts')).toEqual([
      'x.ts:1 f',
      'x.ts:1 g',
    ]);
    expect(storedClosuresIn('\njob.onAbort = async (e: E): Promise<void> => g(e);', 'x.ts')).toEqual([
      'x.ts:2 onAbort',
    ]);
    expect(storedClosuresIn('a[0].f = x => x; g().h = function () {};', 'x.ts')).toEqual([
      'x.ts:1 f',
      'x.ts:1 h',
    ]);
    expect(
      storedClosuresIn(
        'const f = () => a; o.f = f; o.s = (o.s + t).slice(-3); o.n = (a) + b; const o = { f: () => a };\n' +
          'const g: typeof o.f = (e) => 1; // o.f = () => a\n/* this.f = () => a */',
        'x.ts',
      ),
    ).toEqual([]);
  });

  it('the allowed ones are still there (a stale entry would hide a new closure of the same name)', () => {
    for (const { file, property } of allowed)
      expect(
        storedClosuresIn(readFileSync(join(root, file), 'utf8'), 'elsewhere.ts'),
        `${file} ${property}`,
      ).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(` ${property}$`))]));
  });
});
