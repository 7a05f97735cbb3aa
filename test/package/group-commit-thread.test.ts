import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleRow } from '../persistence/fixtures.ts';
import { npmIn, packTroupe, root } from './packed-tarball.ts';

/**
 * Group commit's writer thread is a module of its own in the build (dist/chunks/sqlite-writer-worker.js), found by
 * the chunk that starts it: checked on the tarball `npm pack` makes, installed into a fresh project as a user
 * installs it (the harness of package.test.ts: a copy of what `npm pack` reads, packed there).
 */

const run = promisify(execFile);
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
  files: string[];
  devDependencies: Record<string, string>;
};

let work = '';
let project = '';

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'troupe-package-writer-'));
  const { tarball } = await packTroupe(work);
  project = join(work, 'app');
  await mkdir(project);
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }),
  );
  await npmIn(
    project,
    ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `zod@${pkg.devDependencies.zod}`],
    240_000,
  );
}, 300_000);

afterAll(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

describe('group commit from the installed package', () => {
  it('commits on the writer thread, reads the commit back, and lets the process end', async () => {
    const script = [
      "import { createSqliteStore } from 'troupe';",
      "const store = createSqliteStore('sessions.db', { groupCommit: { writer: 'thread' } });",
      `const session = ${JSON.stringify(idleRow('s'))};`,
      "await store.commit('s', { session });",
      "console.log(store.load('s')?.session.status);",
      "await store.commit('s', { session: { ...session, status: 'closed' } }).catch((error) => console.log(error.name));",
      "console.log(store.load('s')?.session.status);",
    ].join('\n');
    await writeFile(join(project, 'group-commit.mjs'), script);
    const { stdout } = await run(process.execPath, ['group-commit.mjs'], { cwd: project, timeout: 60_000 });
    expect(stdout.trim().split('\n')).toEqual(['idle', 'closed']);
  });
});
