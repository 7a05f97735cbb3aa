import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Every module a program loads costs Node a resolve, a read, a compile and a link before any of its code runs, so
 * the build keeps what importing troupe or troupe/providers loads small: few files, and for the main entry none of
 * the runtime (it loads on the first call of a function that needs it). The package's build script bundles into a
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

/** The static imports of a built file: relative paths resolved, packages and built-ins as written. */
function staticImports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|^import\s*"([^"]+)"/gms)].map(
    (match) => {
      const specifier = match[1] ?? match[2] ?? '';
      return specifier.startsWith('.') ? resolve(dirname(file), specifier) : specifier;
    },
  );
}

/** The files of the build that importing `entry` loads (its static imports, followed). */
function filesLoadedBy(entry: string): string[] {
  const seen = new Set<string>();
  const pending = [join(out, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    pending.push(...staticImports(file).filter((specifier) => specifier.startsWith('/')));
  }
  return [...seen];
}

/** The packages (not built-ins) that importing `entry` loads. */
function packagesLoadedBy(entry: string): string[] {
  return filesLoadedBy(entry).flatMap((file) =>
    staticImports(file).filter((specifier) => !specifier.startsWith('/') && !specifier.startsWith('node:')),
  );
}

/** The built-in modules that importing `entry` imports as ES modules. */
function builtinsImportedBy(entry: string): string[] {
  return filesLoadedBy(entry).flatMap((file) =>
    staticImports(file).filter((specifier) => specifier.startsWith('node:')),
  );
}

const bytesOf = (files: string[]): number =>
  files.reduce((bytes, file) => bytes + readFileSync(file).length, 0);

describe('the built entry points load few files', () => {
  it('importing troupe loads at most 5 of its files', () => {
    expect(filesLoadedBy('index.js').length).toBeLessThanOrEqual(5);
  });

  it('importing troupe loads neither the runtime nor xstate, and less than a third of the code the runtime needs', () => {
    const main = filesLoadedBy('index.js');
    expect(main).not.toContain(join(out, 'chunks/runtime.js'));
    expect(packagesLoadedBy('index.js')).toEqual([]);
    expect(packagesLoadedBy('chunks/runtime.js')).toContain('xstate');
    expect(bytesOf(main)).toBeLessThan(150_000);
    expect(bytesOf(main) * 3).toBeLessThan(bytesOf(filesLoadedBy('chunks/runtime.js')));
  });

  it('importing troupe parses no regular expression with many Unicode classes (V8 checks a literal when it parses the file: the email pattern took 2 ms)', () => {
    const patterns = filesLoadedBy('index.js').flatMap((file) => {
      const source = readFileSync(file, 'utf8');
      // Literals as esbuild writes them (`= /.../u`), and patterns given to RegExp as a string literal (escaped).
      const literals = [...source.matchAll(/=\s*(\/(?:[^/\n\\]|\\.)+\/[dgimsuyv]*)/g)].map(
        (match) => match[1] ?? '',
      );
      const strings = [...source.matchAll(/new RegExp\("((?:[^"\\]|\\.)*)"/g)].map((match) =>
        (match[1] ?? '').replaceAll('\\\\', '\\'),
      );
      return [...literals, ...strings].filter((pattern) => pattern.includes('\\p{'));
    });
    // Two small ones are left (a letter of any script, an invisible format character).
    expect(patterns.length).toBeGreaterThan(0);
    expect(patterns.filter((pattern) => pattern.split('\\p{').length - 1 > 3)).toEqual([]);
  });

  it('importing troupe or troupe/providers imports no built-in module: the code that needs one takes it where it runs', () => {
    // Importing node:module and creating a require at load cost every import about 0.5 ms.
    expect(builtinsImportedBy('index.js')).toEqual([]);
    expect(builtinsImportedBy('providers/index.js')).toEqual([]);
    expect(builtinsImportedBy('chunks/runtime.js').length).toBeGreaterThan(0);
  });

  it('importing troupe/providers loads at most 4 of its files, none of the main entry', () => {
    const files = filesLoadedBy('providers/index.js');
    expect(files.length).toBeLessThanOrEqual(4);
    expect(bytesOf(files)).toBeLessThan(60_000);
  });
});

/** Runs `script` (an ES module) in a fresh Node process in the scratch build's folder; its stdout, parsed. */
function runInBuild(script: string): unknown {
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: out,
    encoding: 'utf8',
  });
  expect(child.stderr).toBe('');
  expect(child.status).toBe(0);
  return JSON.parse(child.stdout);
}

describe('the main entry loads the runtime on first use', () => {
  it('every function the runtime provides is a function of the main entry, and none is a class', () => {
    const found = runInBuild(`
      const runtime = await import('./chunks/runtime.js');
      const main = await import('./index.js');
      const isClass = (value) => /^class\\b/.test(Function.prototype.toString.call(value));
      console.log(JSON.stringify(Object.entries(runtime).map(([name, value]) =>
        [name, typeof value, typeof value === 'function' && isClass(value), typeof main[name]])));
    `) as [string, string, boolean, string][];
    expect(found.map(([name]) => name)).toEqual(
      expect.arrayContaining(['run', 'stream', 'createAgentSystem']),
    );
    for (const [name, type, isClass, mainType] of found)
      expect({ name, type, isClass, mainType }).toEqual({
        name,
        type: 'function',
        isClass: false,
        mainType: 'function',
      });
  });

  it('a run through the main entry works, and the runtime and troupe/providers throw the ConfigError the main entry exports', () => {
    const found = runInBuild(`
      const main = await import('./index.js');
      const testing = await import('./testing/index.js');
      const agent = main.defineAgent({
        name: 'a',
        instructions: 'Answer.',
        model: testing.scriptedModel([{ text: 'hi', stopReason: 'end_turn' }]),
      });
      const result = await main.run(agent, 'Hello');
      const refused = await main.run(agent, 'Hello', { maxSteps: -1 }).catch((error) => error);
      let storeError;
      try { main.createSqliteStore(42); } catch (error) { storeError = error; }
      const providers = await import('./providers/index.js');
      let providerError;
      try { providers.openai('gpt-5-mini', { apiKey: '' }); } catch (error) { providerError = error; }
      console.log(JSON.stringify({
        status: result.status,
        text: result.text,
        refused: [refused.constructor === main.ConfigError, refused instanceof main.TroupeError],
        store: storeError instanceof main.ConfigError,
        provider: providerError?.constructor === main.ConfigError,
        runName: main.run.name,
      }));
    `);
    expect(found).toEqual({
      status: 'completed',
      text: 'hi',
      refused: [true, true],
      store: true,
      provider: true,
      runName: 'run',
    });
  });

  it('an application bundled with the package (esbuild) gets the runtime from its bundle', async () => {
    const app = join(out, 'bundled', 'app.mjs');
    mkdirSync(dirname(app), { recursive: true });
    writeFileSync(
      join(out, 'bundled', 'main.mjs'),
      `import { ConfigError, createMemoryStore } from '../index.js';
      let refused;
      try { createMemoryStore({ maxEventsPerSession: -1 }); } catch (error) { refused = error; }
      console.log(JSON.stringify({ store: typeof createMemoryStore().commit, refused: refused instanceof ConfigError }));`,
    );
    await build({
      entryPoints: [join(out, 'bundled', 'main.mjs')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: app,
      logLevel: 'silent',
    });
    // The bundle is the application's one file: no runtime chunk beside it.
    const child = spawnSync(process.execPath, [app], { cwd: dirname(app), encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ store: 'function', refused: true });
  });
  it('bundlers that resolve the module condition get the main entry with its runtime imported: no require to follow', async () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, Record<string, string>>;
    };
    // Conditions are matched in the order written: `module` before `default`, which Node takes.
    expect(Object.entries(manifest.exports['.'] ?? {})).toEqual([
      ['types', './dist/index.d.ts'],
      ['module', './dist/index.module.js'],
      ['default', './dist/index.js'],
    ]);
    const moduleEntry = join(out, 'index.module.js');
    expect(staticImports(moduleEntry)).toEqual([join(out, 'index.js'), join(out, 'chunks', 'runtime.js')]);

    // The same exports as the main entry, the same classes, and the runtime's own functions in place of stand-ins.
    const compared = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const main = await import(${JSON.stringify(join(out, 'index.js'))});
        const forBundlers = await import(${JSON.stringify(moduleEntry)});
        const runtime = await import(${JSON.stringify(join(out, 'chunks', 'runtime.js'))});
        const names = (m) => Object.keys(m).sort();
        console.log(JSON.stringify({
          sameNames: JSON.stringify(names(main)) === JSON.stringify(names(forBundlers)),
          sameClass: main.ConfigError === forBundlers.ConfigError,
          runIsRuntime: forBundlers.run === runtime.run && main.run !== runtime.run,
          everyDeferredIsRuntime: names(runtime).every((name) => forBundlers[name] === runtime[name]),
        }));`,
      ],
      { encoding: 'utf8' },
    );
    expect(compared.stderr).toBe('');
    expect(JSON.parse(compared.stdout)).toEqual({
      sameNames: true,
      sameClass: true,
      runIsRuntime: true,
      everyDeferredIsRuntime: true,
    });

    // Bundled through it, the application holds the runtime as a module: no require() of it is left to follow.
    const app = join(out, 'bundled-module', 'app.mjs');
    mkdirSync(dirname(app), { recursive: true });
    writeFileSync(
      join(out, 'bundled-module', 'main.mjs'),
      `import { ConfigError, createMemoryStore } from '../index.module.js';
      let refused;
      try { createMemoryStore({ maxEventsPerSession: -1 }); } catch (error) { refused = error; }
      console.log(JSON.stringify({ store: typeof createMemoryStore().commit, refused: refused instanceof ConfigError }));`,
    );
    await build({
      entryPoints: [join(out, 'bundled-module', 'main.mjs')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: app,
      logLevel: 'silent',
    });
    expect(readFileSync(app, 'utf8')).not.toMatch(/require\(["'][^"']*runtime\.js["']\)/);
    const child = spawnSync(process.execPath, [app], { cwd: dirname(app), encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ store: 'function', refused: true });
  });
});
