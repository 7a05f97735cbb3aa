/**
 * Bundles the published JavaScript (dist/) with esbuild: one ESM file per entry point of package.json and shared
 * chunks for the code several entry points use, so that a class or a registry exists once however many entry
 * points a program imports.
 *
 *   node scripts/build-js.ts [--outdir=dist]
 *
 * Every module a program loads costs Node a resolve, a read, a compile and a link before any of its code runs, so
 * importing the main entry loads little:
 * - The functions of the main entry that run agents or hold their state (run, stream, sessions, stores, the
 *   resource manager, audit logs; `deferredModules` below) are stand-ins in the build. The first call of any of
 *   them loads the runtime, a file of its own with the chunks it needs, synchronously (`require()` of an ES
 *   module), and hands the call to the real function; later calls go straight through. Classes and constants are
 *   not deferred: the runtime imports them from the chunks the main entry loaded, so `instanceof` and identity hold
 *   across entry points. An application bundled with Troupe gets the runtime from its bundle: bundlers that
 *   resolve the `module` condition take `dist/index.module.js`, which imports it; esbuild, which does not, follows
 *   the stand-ins' `require`.
 * - The secondary entry points (testing, restate, mcp, tools) are bundled as if they used all of the runtime,
 *   which keeps its code in a few chunks instead of one chunk per combination of entry points that uses a piece of
 *   it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const outdir = resolve(
  root,
  process.argv.find((a) => a.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist',
);

/**
 * The modules of src/ whose exports the main entry hands out as stand-ins for the runtime. What the main entry
 * re-exports from them must be functions (not classes, not objects): test/package/entry-chunks.test.ts checks it.
 */
const deferredModules: ReadonlySet<string> = new Set([
  'audit/audit-log.ts',
  'audit/jsonl-audit-sink.ts',
  'audit/memory-audit-sink.ts',
  'audit/sqlite-audit-sink.ts',
  'audit/verify-audit-log.ts',
  'engine/compiled-machine.ts',
  'guardrails/llm-judge.ts',
  'persistence/memory-store.ts',
  'persistence/sqlite-store.ts',
  'resources/resource-manager.ts',
  'sessions/agent-tool.ts',
  'sessions/parallel.ts',
  'sessions/run.ts',
  'sessions/system.ts',
]);

/** The runtime: one module that re-exports every deferred function; an entry point of the shared build. */
const runtimeEntry = 'runtime';
const runtimeOut = 'chunks/runtime';
/** The main entry package.json gives bundlers under the `module` condition. */
const moduleEntryOut = 'index.module';
/** The runtime's path in the stand-ins until the build knows which file each stand-in landed in. */
const runtimePlaceholder = '__troupe_runtime_path__';

/**
 * Each entry point of the shared build, with the entry points (or modules) whose exports its bundle keeps live
 * (see above). Programs that import troupe/tools or troupe/testing run agents, so keeping the runtime live there
 * costs them nothing. troupe/providers shares one small module with the runtime and nothing else of it; kept live
 * in the main entry (2 KB), it joins a chunk troupe/providers loads anyway instead of being a file of its own.
 */
const entries: ReadonlyMap<string, readonly string[]> = new Map([
  ['index.ts', ['core/abort.ts']],
  [runtimeEntry, []],
  ['providers/index.ts', []],
  ['testing/index.ts', [runtimeEntry]],
  ['restate/index.ts', [runtimeEntry]],
  ['tools/mcp/index.ts', [runtimeEntry]],
  ['tools/builtin/index.ts', [runtimeEntry]],
]);

/**
 * Programs of their own, bundled alone (they share nothing with the entry points): the SQL tool's child process,
 * and group commit's writer thread, found beside the chunk that starts it (the chunks' folder).
 */
const standalone: readonly (readonly [entry: string, out: string])[] = [
  ['tools/builtin/sql-query-process.ts', 'tools/builtin/sql-query-process'],
  ['persistence/sqlite-writer-worker.ts', 'chunks/sqlite-writer-worker'],
];

const virtualPrefix = 'troupe-entry:';
const mainEntry = resolve(root, 'src/index.ts');
const mainSource = readFileSync(mainEntry, 'utf8');

interface ReExport {
  /** The statement as written in src/index.ts. */
  statement: string;
  /** The module it re-exports from, relative to src/. */
  module: string;
  /** The values it re-exports (types left out). */
  names: string[];
}

/** The `export { ... } from './module.ts'` statements of the main entry, with the values each re-exports. */
const reExports: ReExport[] = [
  ...mainSource.matchAll(/^export\s*(type\s*)?\{([^}]*)\}\s*from\s*'\.\/([^']+)';$/gm),
].map((match) => ({
  statement: match[0],
  module: match[3] ?? '',
  names:
    match[1] !== undefined
      ? []
      : (match[2] ?? '')
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '' && !name.startsWith('type ')),
}));

const deferred = reExports.filter((e) => deferredModules.has(e.module));
for (const module of deferredModules)
  if (!deferred.some((e) => e.module === module))
    throw new Error(`build-js: src/index.ts re-exports nothing from the deferred module ${module}`);
for (const name of deferred.flatMap((e) => e.names))
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) throw new Error(`build-js: cannot defer the export "${name}"`);

/** The runtime's module: the deferred functions, from where they are written. */
const runtimeSource = deferred
  .map((e) => `export { ${e.names.join(', ')} } from ${JSON.stringify(`./src/${e.module}`)};`)
  .join('\n');

/** The main entry with its deferred re-exports replaced by stand-ins that load the runtime on their first call. */
const mainWithStandIns = `${deferred.reduce(
  (source, e) =>
    source.replace(
      e.statement,
      e.names
        .map(
          (name) =>
            `export function ${name}(...args: never[]): unknown { return runtime().${name}(...args); }`,
        )
        .join('\n'),
    ),
  mainSource,
)}
type Runtime = Record<string, (...args: never[]) => unknown>;
let loaded: Runtime | undefined;
function runtime(): Runtime {
  loaded ??= requireRuntime();
  return loaded;
}
/**
 * A bundler that bundles this file turns the \`require\` below into the runtime it bundled too. Node's ES modules
 * have no \`require\` (or a global one an application set, which resolves from elsewhere): the runtime is then the
 * file next to this one.
 */
function requireRuntime(): Runtime {
  try {
    return require(${JSON.stringify(runtimePlaceholder)}) as Runtime;
  } catch (error) {
    const notFound = (error as { code?: unknown } | undefined)?.code === 'MODULE_NOT_FOUND';
    if (!(error instanceof ReferenceError) && !notFound) throw error;
  }
  return process.getBuiltinModule('node:module').createRequire(import.meta.url)(${JSON.stringify(runtimePlaceholder)}) as Runtime;
}
`;

/**
 * Builds the main entry with its stand-ins, the runtime, and the secondary entry points that keep others live:
 * such an entry point re-exports its module and refers to the others' namespaces in a branch that never runs;
 * esbuild cannot tell, so their code lands in the chunks this entry point shares.
 */
const entryModules: Plugin = {
  name: 'entry-modules',
  setup(b) {
    b.onResolve({ filter: /^troupe-entry:/ }, (args) => ({
      path: args.path.slice(virtualPrefix.length),
      namespace: 'troupe-entry',
    }));
    b.onLoad({ filter: /.*/, namespace: 'troupe-entry' }, (args) => {
      const kept = entries.get(args.path) ?? [];
      const specifier = (entry: string): string =>
        JSON.stringify(entry === runtimeEntry ? `${virtualPrefix}${runtimeEntry}` : `./src/${entry}`);
      return {
        resolveDir: root,
        loader: 'ts',
        contents: [
          args.path === runtimeEntry
            ? runtimeSource
            : `export * from ${JSON.stringify(`./src/${args.path}`)};`,
          ...kept.map((entry, i) => `import * as kept${i} from ${specifier(entry)};`),
          `const never = (globalThis as { [key: symbol]: unknown })[Symbol.for('troupe.build.never')];`,
          ...kept.map((_, i) => `if (never === kept${i}) throw new Error();`),
        ].join('\n'),
      };
    });
    b.onResolve({ filter: new RegExp(`^${runtimePlaceholder}$`) }, (args) => ({
      path: args.path,
      external: true,
    }));
    b.onLoad({ filter: /[\\/]src[\\/]index\.ts$/ }, (args) =>
      resolve(args.path) === mainEntry ? { loader: 'ts', contents: mainWithStandIns } : undefined,
    );
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

const shared = await build({
  ...common,
  entryPoints: [...entries].map(([entry, kept]) => ({
    in: kept.length === 0 && entry !== runtimeEntry ? `src/${entry}` : `${virtualPrefix}${entry}`,
    out: entry === runtimeEntry ? runtimeOut : entry.replace(/\.ts$/, ''),
  })),
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [entryModules],
  write: false,
});

// The stand-ins name the runtime by its path from the file they landed in. esbuild writes their \`require\` as a call
// of its shim (which throws in an ES module); it becomes \`require\` again, a call an application's bundler follows.
const runtimeFile = resolve(outdir, `${runtimeOut}.js`);
const shimmedRequire = `__require(${JSON.stringify(runtimePlaceholder)})`;
let standIns = 0;
for (const file of shared.outputFiles) {
  const path = relative(dirname(file.path), runtimeFile).replaceAll('\\', '/');
  if (file.text.includes(shimmedRequire)) standIns++;
  const text = file.text
    .replaceAll(shimmedRequire, `require(${JSON.stringify(runtimePlaceholder)})`)
    .replaceAll(runtimePlaceholder, path.startsWith('.') ? path : `./${path}`);
  mkdirSync(dirname(file.path), { recursive: true });
  writeFileSync(file.path, text);
}

if (standIns !== 1) throw new Error(`build-js: the runtime's require() landed in ${standIns} files, not one`);

// Bundlers that resolve the `module` condition (Rollup, Vite, webpack) get the main entry with the runtime imported
// as a module: they need not follow a `require()` inside an ES module (Rollup's CommonJS plugin leaves it alone by
// default), and loading on first use means nothing in a bundle. The explicit exports take the place of the
// stand-ins of the same names that `export *` would bring.
writeFileSync(
  resolve(outdir, `${moduleEntryOut}.js`),
  [
    '// The main entry for bundlers (the "module" condition): its runtime imported, not loaded on first use.',
    'export * from "./index.js";',
    `export { ${deferred.flatMap((e) => e.names).join(', ')} } from "./${runtimeOut}.js";`,
    '',
  ].join('\n'),
);

await build({
  ...common,
  entryPoints: standalone.map(([entry, out]) => ({ in: `src/${entry}`, out })),
});
