import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Every module a program loads costs Node a resolve, a read and a link before any of its code runs, so the build
 * keeps the files that importing troupe or troupe/providers loads few. The package's build script bundles into a
 * scratch folder and the static imports of each entry point are followed from there.
 */

const root = resolve(import.meta.dirname, '../..');
const scratch = join(root, '.troupe');
mkdirSync(scratch, { recursive: true });
const out = mkdtempSync(join(scratch, 'entry-chunks-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

beforeAll(() => {
  const built = spawnSync(process.execPath, [join(root, 'scripts/build-js.ts'), `--outdir=${out}`], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(built.stderr).toBe('');
  expect(built.status).toBe(0);
});

/** The files of the build that importing `entry` loads (its static imports, followed). */
function filesLoadedBy(entry: string): string[] {
  const seen = new Set<string>();
  const pending = [join(out, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(
      /^(?:import|export)\b[^;]*?\bfrom\s*"(\.[^"]+)"|^import\s*"(\.[^"]+)"/gms,
    ))
      pending.push(resolve(dirname(file), match[1] ?? match[2] ?? ''));
  }
  return [...seen];
}

describe('the built entry points load few files', () => {
  it('importing troupe loads at most 5 of its files', () => {
    expect(filesLoadedBy('index.js').length).toBeLessThanOrEqual(5);
  });

  it('importing troupe/providers loads at most 7 of its files, none of the main entry', () => {
    const files = filesLoadedBy('providers/index.js');
    expect(files.length).toBeLessThanOrEqual(7);
    expect(files.reduce((bytes, file) => bytes + readFileSync(file).length, 0)).toBeLessThan(100_000);
  });
});
