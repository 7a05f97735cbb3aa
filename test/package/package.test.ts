import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmIn, packTroupe, root } from './packed-tarball.ts';

/**
 * What `npm publish` would ship, checked on the tarball `npm pack` makes (its `prepack` builds dist/ from a clean
 * slate): the contents, publint and Are the Types Wrong on it, and the package installed into a fresh project as a
 * user installs it, with strict TypeScript (`exactOptionalPropertyTypes`, `skipLibCheck: false`) and only the
 * peer dependencies the entry point in use needs. The installs use the npm cache first (`--prefer-offline`): the
 * versions installed are the repository's own, which `npm ci` has already put there.
 */

const run = promisify(execFile);
const bin = (name: string): string => join(root, 'node_modules', '.bin', name);

interface PackageJson {
  exports: Record<string, string | { types: string; default: string }>;
  devDependencies: Record<string, string>;
  files: string[];
}
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as PackageJson;

/** The entry points users import (`troupe`, `troupe/testing`, ...), with their declaration and module files. */
const entries = Object.entries(pkg.exports).flatMap(([subpath, target]) =>
  typeof target === 'string'
    ? []
    : [{ name: `troupe${subpath.slice(1)}`, types: target.types.slice(2), module: target.default.slice(2) }],
);

let work = '';
let tarball = '';
let shipped: string[] = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'troupe-package-'));
  ({ tarball, files: shipped } = await packTroupe(work));
}, 120_000);

afterAll(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('ships the build of every entry point, LICENSE, README and the documents the README links', () => {
    expect(entries.map(({ name }) => name)).toContain('troupe/testing');
    for (const { types, module } of entries) {
      expect(shipped).toContain(types);
      expect(shipped).toContain(module);
    }
    for (const file of [
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'BENCHMARKS.md',
      'TESTING.md',
      'docs/testing.md',
      'docs/getting-started.md',
    ])
      expect(shipped).toContain(file);
  });

  it('ships no tests, fixtures, examples, benchmarks or configuration', () => {
    const unwanted = shipped.filter(
      (path) =>
        /(^|\/)(test|tests|fixtures|examples|bench|node_modules|\.vitepress)\//.test(path) ||
        /^docs\/(api\/|package(-lock)?\.json|typedoc\.json|tsconfig)/.test(path) ||
        /\.(test|spec)\.[cm]?[jt]s$/.test(path) ||
        /^(tsconfig|vitest|stryker|biome)/.test(path) ||
        path.startsWith('.'),
    );
    expect(unwanted).toEqual([]);
  });

  it('every relative link of the shipped Markdown documents points at a shipped file', async () => {
    const extract = join(work, 'extract');
    await mkdir(extract, { recursive: true });
    await run('tar', ['xzf', tarball, '-C', extract]);
    const broken: string[] = [];
    for (const document of shipped.filter((path) => path.endsWith('.md'))) {
      const text = await readFile(join(extract, 'package', document), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (target === undefined || /^[a-z]+:/i.test(target)) continue;
        const path = join(document, '..', target);
        if (!shipped.includes(path)) broken.push(`${document} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('publint finds nothing, in strict mode, on the shipped files', async () => {
    const extract = join(work, 'publint');
    await mkdir(extract, { recursive: true });
    await run('tar', ['xzf', tarball, '-C', extract]);
    const { stdout } = await run(bin('publint'), ['--strict', '--pack', 'false', join(extract, 'package')]);
    expect(stdout).toContain('All good!');
  });

  it('Are the Types Wrong finds no problem for an ESM package, offline, on the tarball', async () => {
    // esm-only: the package is ESM; `require()` of it (Node 22.12+ loads ESM synchronously) is run below instead.
    const { stdout } = await run(bin('attw'), [tarball, '--profile', 'esm-only', '--format', 'json']).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
    );
    const { problems } = JSON.parse(stdout) as { problems: Record<string, { resolutionKind?: string }[]> };
    const counted = Object.values(problems)
      .flat()
      .filter((problem) => problem.resolutionKind !== 'node10' && problem.resolutionKind !== 'node16-cjs');
    expect(counted).toEqual([]);
  });
});

/** Strict TypeScript as a careful user sets it up, checking the installed declaration files too. */
const strictCompilerOptions = {
  target: 'ES2023',
  lib: ['ES2023'],
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  types: ['node'],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
  outDir: 'out',
};

/**
 * Some dependencies' own declarations do not compile under `exactOptionalPropertyTypes` with `skipLibCheck: false`
 * (XState's setup.d.ts, the Restate SDK's serde_api.d.ts): a user with both settings sees those from any import of
 * that package, with or without Troupe. What counts is every diagnostic in Troupe's declarations or the user's code.
 */
const anotherPackagesOwn = /^node_modules\/(?!troupe\/)/;

/** Type-checks (and compiles to out/) the project's `files` with its own tsconfig: the diagnostics that count. */
async function typeCheck(project: string, name: string, files: string[]): Promise<string[]> {
  const config = join(project, `tsconfig.${name}.json`);
  await writeFile(config, JSON.stringify({ compilerOptions: strictCompilerOptions, files }));
  const output = await run(bin('tsc'), ['-p', config], { cwd: project, timeout: 60_000 }).then(
    () => '',
    (error: { stdout?: string; message: string }) => error.stdout || error.message,
  );
  // A diagnostic starts at the beginning of a line; its explanation follows, indented.
  const diagnostics = output.split(/\n(?=\S)/).filter((diagnostic) => diagnostic.trim() !== '');
  return diagnostics.filter((diagnostic) => !anotherPackagesOwn.test(diagnostic));
}

/** The README's first TypeScript block: its quick start. */
async function quickStart(): Promise<string> {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md has no ```ts block');
  return block;
}

describe('installed into a fresh project', () => {
  let project = '';
  const install = (specs: string[]) =>
    npmIn(project, ['install', '--no-audit', '--no-fund', '--prefer-offline', ...specs]);
  const pinned = (name: string): string => `${name}@${pkg.devDependencies[name]}`;

  beforeAll(async () => {
    project = join(work, 'app');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }),
    );
    // Only zod, the one required peer; no SDK, fast-check or MCP package.
    await install([tarball, pinned('zod'), pinned('@types/node')]);
  }, 120_000);

  it('installs only the required peer, without optional ones or a lifecycle script of troupe', async () => {
    for (const installed of ['troupe', 'zod', 'xstate'])
      expect(existsSync(join(project, 'node_modules', installed, 'package.json'))).toBe(true);
    for (const optional of [
      'fast-check',
      'openai',
      '@modelcontextprotocol/client',
      '@restatedev/restate-sdk',
    ])
      expect(existsSync(join(project, 'node_modules', optional))).toBe(false);
    const manifest = JSON.parse(
      await readFile(join(project, 'node_modules', 'troupe', 'package.json'), 'utf8'),
    ) as { scripts?: Record<string, string> };
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(manifest.scripts?.[script]).toBeUndefined();
  });

  /** The entry points whose users need no optional peer: their declarations must compile with zod alone. */
  const withoutOptionalPeers = ['troupe', 'troupe/testing', 'troupe/providers', 'troupe/tools'];

  /** A module that imports every export of `entry`, so that all of its declaration files are checked. */
  async function importing(entry: string): Promise<string> {
    const file = `entry-${entry.replace('/', '-')}.ts`;
    await writeFile(
      join(project, file),
      `import * as entry from '${entry}';\nexport type Entry = typeof entry;\n`,
    );
    return file;
  }

  it("runs the README's quick start offline on the scripted model; it and the declarations of every entry point that needs no optional peer type-check strictly", async () => {
    await writeFile(join(project, 'quick-start.ts'), await quickStart());
    const entryFiles = await Promise.all(withoutOptionalPeers.map(importing));
    // One program for all: a missing optional peer shows as an error in the declaration file that imports it.
    expect(await typeCheck(project, 'zod-only', ['quick-start.ts', ...entryFiles])).toEqual([]);
    const env = { ...process.env };
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'])
      delete env[key];
    const { stdout } = await run(process.execPath, [join(project, 'out', 'quick-start.js')], {
      cwd: project,
      env,
      timeout: 30_000,
    });
    expect(stdout).toContain('completed { total: 5 }');
    expect(stdout).toContain('{"total": 5}\ncompleted { total: 5 }');
  });

  it.each(withoutOptionalPeers)('%s loads through require() as well as import', async (entry) => {
    const script = `const entry = require(${JSON.stringify(entry)});\nconsole.log(Object.keys(entry).length > 0);\n`;
    await writeFile(join(project, 'require-entry.cjs'), script);
    const { stdout } = await run(process.execPath, ['require-entry.cjs'], { cwd: project, timeout: 30_000 });
    expect(stdout.trim()).toBe('true');
  });

  it("without fast-check, troupe/testing's property helpers say what to install", async () => {
    const script = [
      "import { arbitraryModelTurns } from 'troupe/testing';",
      'try { arbitraryModelTurns(); } catch (error) { console.log(error.name, error.message); }',
    ].join('\n');
    await writeFile(join(project, 'no-fast-check.mjs'), script);
    const { stdout } = await run(process.execPath, ['no-fast-check.mjs'], { cwd: project, timeout: 30_000 });
    expect(stdout.trim()).toBe(
      'ConfigError arbitraryModelTurns() needs the "fast-check" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run `npm install --save-dev fast-check`.',
    );
  });

  /**
   * The entry points that need one optional peer compile with it: troupe/restate with the Restate SDK alone, then
   * troupe/mcp with the MCP client added (serving agents adds `@modelcontextprotocol/server`, not needed to compile).
   */
  it('the declarations of troupe/restate (with the Restate SDK) and troupe/mcp (with the MCP client) compile', async () => {
    await install([pinned('@restatedev/restate-sdk')]);
    expect(await typeCheck(project, 'restate', [await importing('troupe/restate')])).toEqual([]);
    await install([pinned('@modelcontextprotocol/client')]);
    expect(await typeCheck(project, 'mcp', [await importing('troupe/mcp')])).toEqual([]);
  }, 120_000);
});
