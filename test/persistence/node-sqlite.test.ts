/**
 * node:sqlite loads without Node 22's `ExperimentalWarning: SQLite is an experimental feature` on stderr, and every
 * other warning still gets through. Node 24 prints no such warning, so the child processes here make the load emit
 * it as Node 22 does (through process.emitWarning); with TROUPE_NODE22 set to a Node.js 22 binary, that Node runs
 * the real thing too.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isSqliteExperimentalWarning, loadNodeSqlite } from '../../src/persistence/node-sqlite.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const sqliteWarning = 'SQLite is an experimental feature and might change at any time';

/** Runs `code` (an ES module, with tsx) in a fresh Node.js process; its stdout and stderr. */
const child = (code: string, node = process.execPath) =>
  run(node, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, timeout: 30_000 });

/** Child code that makes node:sqlite's load emit warnings, as Node 22 does, then opens a store. */
const emitsOnLoad = (warnings: string) => `
  const load = process.getBuiltinModule;
  process.getBuiltinModule = (name) => {
    if (name === 'node:sqlite') { ${warnings} }
    return load(name);
  };
  const before = process.emitWarning;
  const { createSqliteStore } = await import('./src/persistence/sqlite-store.ts');
  createSqliteStore(':memory:').close();
  console.log(process.emitWarning === before ? 'restored' : 'left wrapped');
`;

describe('loading node:sqlite', () => {
  it('tells the SQLite experimental warning from every other warning', () => {
    expect(isSqliteExperimentalWarning(sqliteWarning, 'ExperimentalWarning')).toBe(true);
    expect(isSqliteExperimentalWarning(sqliteWarning, { type: 'ExperimentalWarning' })).toBe(true);
    const asError = new Error(sqliteWarning);
    asError.name = 'ExperimentalWarning';
    expect(isSqliteExperimentalWarning(asError)).toBe(true);
    expect(isSqliteExperimentalWarning(sqliteWarning)).toBe(false);
    expect(isSqliteExperimentalWarning(sqliteWarning, 'DeprecationWarning')).toBe(false);
    expect(isSqliteExperimentalWarning('WASI is an experimental feature', 'ExperimentalWarning')).toBe(false);
    expect(isSqliteExperimentalWarning(`Note: ${sqliteWarning}`, 'ExperimentalWarning')).toBe(false);
  });

  it('gives the module, and leaves process.emitWarning as it found it', () => {
    const before = process.emitWarning;
    expect(typeof loadNodeSqlite()?.DatabaseSync).toBe('function');
    expect(process.emitWarning).toBe(before);
  });

  it('prints nothing for the SQLite warning while the store loads, and lets every other warning through', async () => {
    const quiet = await child(
      emitsOnLoad(`process.emitWarning(${JSON.stringify(sqliteWarning)}, 'ExperimentalWarning');`),
    );
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout.trim()).toBe('restored');

    const others = await child(
      emitsOnLoad(`
        process.emitWarning(${JSON.stringify(sqliteWarning)}, 'ExperimentalWarning');
        process.emitWarning('Something else is an experimental feature', 'ExperimentalWarning');
        process.emitWarning('an old API', 'DeprecationWarning');
      `),
    );
    expect(others.stderr).not.toContain('SQLite');
    expect(others.stderr).toContain('ExperimentalWarning: Something else is an experimental feature');
    expect(others.stderr).toContain('DeprecationWarning: an old API');
    expect(others.stdout.trim()).toBe('restored');
  });

  const node22 = process.env.TROUPE_NODE22;
  it.skipIf(node22 === undefined)('prints no warning on a real Node.js 22 (TROUPE_NODE22)', async () => {
    const code = `
      const { createSqliteStore } = await import('./src/persistence/sqlite-store.ts');
      createSqliteStore(':memory:').close();
      process.emitWarning('still warns', 'ExperimentalWarning');
      console.log(process.versions.node);
    `;
    const result = await child(code, node22);
    expect(result.stdout.trim()).toMatch(/^22\./);
    expect(result.stderr).not.toContain('SQLite');
    expect(result.stderr).toContain('ExperimentalWarning: still warns');
  });
});
