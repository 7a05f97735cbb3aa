import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import base from '../vitest.config.ts';

/**
 * The engine's tests on another copy of xstate (`npm run test:xstate-latest`, scripts/xstate-latest.ts): `xstate`
 * and its subpaths resolve to the package in the folder TROUPE_XSTATE_DIR names, for Troupe's sources and the tests
 * alike.
 */
const xstateDir = process.env.TROUPE_XSTATE_DIR;
if (!xstateDir) throw new Error('TROUPE_XSTATE_DIR must name the xstate package folder to test against.');

type Exported = string | { [condition: string]: Exported };

/** The file a subpath export resolves to under these conditions, in the order the export map lists them. */
function pick(target: Exported | undefined, conditions: readonly string[]): string | undefined {
  if (target === undefined || typeof target === 'string') return target;
  for (const [condition, value] of Object.entries(target))
    if (conditions.includes(condition)) return pick(value, conditions);
  return undefined;
}

/**
 * An alias for each entry point xstate exports, to its development build's ES module: the build Node picks for the
 * installed xstate under Vitest (the "development" condition), which the engine's tests of its warnings rely on.
 */
function entryAliases(folder: string): { find: RegExp; replacement: string }[] {
  const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {
    exports: Record<string, Exported>;
  };
  const conditions = ['development', 'module', 'import', 'default'];
  return Object.entries(manifest.exports).flatMap(([subpath, target]) => {
    const file = pick(target, conditions);
    if (!file || subpath.includes('*') || !/\.m?js$/.test(file)) return [];
    const specifier = `xstate${subpath.slice(1)}`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    return [{ find: new RegExp(`^${specifier}$`), replacement: join(folder, file) }];
  });
}

const { projects: _projects, ...baseTest } = base.test ?? {};
const baseAliases = (base.resolve?.alias ?? []) as { find: RegExp; replacement: string }[];

export default defineConfig({
  ...base,
  root: fileURLToPath(new URL('..', import.meta.url)),
  resolve: {
    ...base.resolve,
    alias: [...baseAliases, ...entryAliases(xstateDir)],
  },
  test: {
    ...baseTest,
    include: ['test/engine/*.test.ts'],
    // Through Vite's resolver, so that the alias applies to xstate's importers in node_modules as well.
    server: { deps: { inline: ['xstate'] } },
  },
});
