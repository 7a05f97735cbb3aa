/**
 * Bundles the published JavaScript (dist/) with esbuild: one ESM file per entry point of package.json and shared
 * chunks for the code several entry points use, so that a class or a registry exists once however many entry
 * points a program imports.
 *
 *   node scripts/build-js.ts [--outdir=dist]
 *
 * Every module a program loads costs Node a resolve, a read and a link before any code runs, so the chunks the
 * main entry and troupe/providers load are kept few: the secondary entry points (testing, restate, mcp, tools)
 * are bundled as if they used all of the main entry, which keeps the code of the main entry in one or two chunks
 * instead of one chunk per combination of entry points that uses a piece of it.
 */
import { resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const outdir = process.argv.find((a) => a.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist';

/**
 * Each entry point of the shared build, with the entry points whose exports its bundle keeps live (see above).
 * Programs that import troupe/tools or troupe/testing import troupe as well, so keeping its code live there costs
 * them nothing.
 */
const entries: ReadonlyMap<string, readonly string[]> = new Map([
  ['index.ts', []],
  ['providers/index.ts', []],
  ['testing/index.ts', ['index.ts']],
  ['restate/index.ts', ['index.ts']],
  ['tools/mcp/index.ts', ['index.ts']],
  ['tools/builtin/index.ts', ['index.ts']],
]);

/** The SQL tool's child process: a program of its own, so it shares nothing and is bundled alone. */
const standalone = ['tools/builtin/sql-query-process.ts'];

const virtualPrefix = 'troupe-entry:';

/**
 * An entry point that keeps others live re-exports its module and refers to the others' namespaces in a branch
 * that never runs: esbuild cannot tell, so their code lands in the chunks this entry point shares.
 */
const keepLive: Plugin = {
  name: 'keep-live',
  setup(b) {
    b.onResolve({ filter: /^troupe-entry:/ }, (args) => ({
      path: args.path.slice(virtualPrefix.length),
      namespace: 'troupe-entry',
    }));
    b.onLoad({ filter: /.*/, namespace: 'troupe-entry' }, (args) => {
      const kept = entries.get(args.path) ?? [];
      return {
        resolveDir: root,
        loader: 'ts',
        contents: [
          `export * from ${JSON.stringify(`./src/${args.path}`)};`,
          ...kept.map((entry, i) => `import * as kept${i} from ${JSON.stringify(`./src/${entry}`)};`),
          `const never = (globalThis as { [key: symbol]: unknown })[Symbol.for('troupe.build.never')];`,
          ...kept.map((_, i) => `if (never === kept${i}) throw new Error();`),
        ].join('\n'),
      };
    });
  },
};

const common = {
  absWorkingDir: root,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  packages: 'external',
  sourcemap: true,
  sourcesContent: false,
  outdir,
  logLevel: 'warning',
} as const;

await build({
  ...common,
  entryPoints: [...entries].map(([entry, kept]) => ({
    in: kept.length === 0 ? `src/${entry}` : `${virtualPrefix}${entry}`,
    out: entry.replace(/\.ts$/, ''),
  })),
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [keepLive],
});

await build({
  ...common,
  entryPoints: standalone.map((entry) => ({ in: `src/${entry}`, out: entry.replace(/\.ts$/, '') })),
});
