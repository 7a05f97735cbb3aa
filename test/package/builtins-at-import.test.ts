import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Importing Troupe loads no Node built-in that only some features use: node:crypto (the lease token, audit
 * hashes) and node:fs as a module (importing it makes Node build its stream classes and readline, several
 * milliseconds of every importer's startup); and of the packages, only xstate. The entry points are bundled the way the package is built and
 * imported in a fresh process, which then lists the built-in modules it loaded.
 */

const root = resolve(import.meta.dirname, '../..');
// Inside the project (and gitignored) so that the bundle's external imports (xstate) resolve.
const scratch = join(root, '.troupe');
mkdirSync(scratch, { recursive: true });
const out = mkdtempSync(join(scratch, 'builtins-at-import-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The packages each bundled entry point imports, by entry point. */
const packages = new Map<string, string[]>();

/** The built-in modules a fresh Node process has loaded after importing `entry` (a file of src/). */
async function builtinsLoadedBy(entry: string): Promise<string[]> {
  const name = entry.replaceAll('/', '-').replace(/\.ts$/, '.js');
  const outfile = join(out, name);
  const result = await build({
    metafile: true,
    entryPoints: [join(root, 'src', entry)],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    packages: 'external',
    outfile,
    logLevel: 'silent',
  });
  packages.set(
    entry,
    Object.values(result.metafile.outputs).flatMap((output) =>
      output.imports
        .filter((i) => i.external && i.kind === 'import-statement' && !i.path.startsWith('node:'))
        .map((i) => i.path),
    ),
  );
  const script = `await import(${JSON.stringify(pathToFileURL(outfile).href)});
console.log(JSON.stringify(process.moduleLoadList));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(child.stderr).toBe('');
  return JSON.parse(child.stdout) as string[];
}

const heavy = [
  'NativeModule crypto',
  'NativeModule internal/fs/streams',
  'NativeModule internal/readline/interface',
];

describe('the built-ins a feature needs load on its first use, not at import', () => {
  it.each(['index.ts', 'providers/index.ts'])(
    'importing src/%s loads neither node:crypto nor node:fs streams',
    async (entry) => {
      const loaded = await builtinsLoadedBy(entry);
      expect(loaded).toContain('NativeModule fs');
      expect(heavy.filter((module) => loaded.includes(module))).toEqual([]);
    },
  );

  it('importing src/index.ts loads one package: xstate', async () => {
    await builtinsLoadedBy('index.ts');
    expect(new Set(packages.get('index.ts'))).toEqual(new Set(['xstate']));
  });
});
