import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commentLines } from '../support/source-comments.ts';

/**
 * Comments in src/ (and so in the published .d.ts files and sources) speak to users: they say what a thing does
 * and why. They never cite the project's planning documents, which users cannot read: requirement ids (R5, L1-L6,
 * "(T2)"), "REQUIREMENTS", "ARCHITECTURE" and its numbered rules, the numbered reference documents ("reference
 * 000", "[001, 003]") or the numbered XState pitfalls of the notes. A public issue link (statelyai/xstate#5153) is
 * fine: users can follow it.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The requirement id families, exactly: a bare letter and number ("V8", "W2", "o3") stays free for other uses. */
const ID = '(?:C1|I[1-6]|L1[0-3]|L[1-9]|M[1-6]|O[1-4]|P[1-9]|R[1-6]|S[1-5]|ST[1-6]|T[1-9]|V[1-4])';

const CITATIONS: readonly { what: string; pattern: RegExp }[] = [
  { what: 'the requirements document', pattern: /\bREQUIREMENTS\b/ },
  { what: 'the architecture document', pattern: /\bARCHITECTURE\b/ },
  { what: 'a numbered rule', pattern: /\brules? \d+\b/i },
  { what: 'a numbered reference document', pattern: /\breferences? \d{3}\b/i },
  { what: 'reference documents cited by number', pattern: /\[0\d\d(?:,\s*0\d\d)*\]/ },
  { what: 'a numbered pitfall', pattern: /\bpitfalls? \d+\b/i },
  { what: 'requirement ids in parentheses', pattern: new RegExp(String.raw`\(${ID}(?:\s*[-–,]\s*${ID})*\)`) },
  { what: 'a range of requirement ids', pattern: new RegExp(String.raw`\b${ID}\s*[-–]\s*${ID}\b`) },
  { what: 'a requirement id as a name', pattern: new RegExp(String.raw`\b${ID}(?:'s\b|:)`) },
];

function citationsIn(text: string): string[] {
  return CITATIONS.filter(({ pattern }) => pattern.test(text)).map(({ what }) => what);
}

/** Each citation in the comments of a file, as "file:line: what it cites: the comment line". */
function citationsOf(path: string): string[] {
  const file = relative(root, path);
  return commentLines(readFileSync(path, 'utf8')).flatMap(({ line, text }) =>
    citationsIn(text).map((what) => `${file}:${line}: ${what}: ${text.trim()}`),
  );
}

function filesUnder(directory: string, suffix: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix))
    .map((name) => join(directory, name))
    .sort();
}

describe('comments cite no internal documents', () => {
  it('in src/', () => {
    const files = filesUnder(join(root, 'src'), '.ts');
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap(citationsOf)).toEqual([]);
  });

  // dist/ is built on demand (npm run build) and not committed. A declaration file older than its source is left
  // over from an earlier build: the src/ check above covers what the next build will emit.
  it.skipIf(!existsSync(join(root, 'dist')))(
    'in the declaration files of dist/, when built from this source',
    () => {
      const dist = join(root, 'dist');
      const fresh = filesUnder(dist, '.d.ts').filter((declaration) => {
        const source = join(root, 'src', relative(dist, declaration).replace(/\.d\.ts$/, '.ts'));
        return existsSync(source) && statSync(declaration).mtimeMs >= statSync(source).mtimeMs;
      });
      expect(fresh.flatMap(citationsOf)).toEqual([]);
    },
  );
});

describe('the citation patterns', () => {
  it('catch the citations they are for', () => {
    const cited = [
      ' * The ReAct text strategy (REQUIREMENTS L12, reference 001) for models without native tool calling.',
      '/** What the session machine needs to know about an agent: data only (ARCHITECTURE rule 1). */',
      ' * the listeners. Model deltas come straight here from the model actor, never through the statechart (rule 4).',
      " * Reference 003's SSE chunk: `event: <type>` and one JSON `data:` line",
      '/** How a provider retries, times out and falls back (P7). */',
      ' * The agent loop as a statechart (L1-L6, L11). Pure.',
      ' * each with its timeout and retries (T1-T3), and',
      '      // L1: with tools on, no schema.',
      "            // L3's optional last answer with tools off.",
      '      // Pitfall 17: a root without an error observer crashes the process.',
      '        stopOrphans(actor); // its effects actor would keep running (XState pitfall 2)',
      ' * Input/output guardrails [001, 003].',
      ' * Budgets carry into nested agents (R5, R6).',
    ];
    expect(cited.filter((text) => citationsIn(text).length === 0)).toEqual([]);
  });

  it('leave engine names, workloads, model names, numbers and issue links alone', () => {
    const plain = [
      ' * with Object.assign, which V8 does in ~0.1 µs up to 19 keys (V8).',
      " * share this host's system instead, which matters with thousands of runs in flight (bench W2).",
      "  o3: { input: 2, cachedInput: 0.5, output: 8 }, // 'o3-mini', 'o4-mini'",
      ' * Mastra pins another patch of @ai-sdk/provider; the object is a valid V4 model (LanguageModelV4).',
      ' * 60-bit FNV-1a style hash (0x01000193), {time (ISO 8601)}, HTTP 429, 10,000 sessions.',
      ' * XState issue statelyai/xstate#5153: an actor that errors from its own action leaves its children running.',
      "  /** 1-64 letters, digits, `_` or `-` (the strictest provider's rule). */",
      ' * Numbers beyond the id families: L0, R7, T10, ST9.',
    ];
    expect(plain.filter((text) => citationsIn(text).length > 0)).toEqual([]);
  });
});

describe('commentLines', () => {
  it('returns the comments, line by line, and nothing inside strings, templates or regular expressions', () => {
    // A TypeScript sample kept as text: strings, regular expressions and templates holding `//`, `/*` and braces.
    const sample = readFileSync(join(root, 'test/docs/comment-lexer-sample.txt'), 'utf8');
    expect(commentLines(sample)).toEqual([
      { line: 1, text: '// the server' },
      { line: 3, text: '/* block' },
      { line: 4, text: '   still the block */' },
      { line: 4, text: '// after' },
      { line: 10, text: '/** last */' },
    ]);
  });
});
