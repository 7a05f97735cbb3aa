import { execFile } from 'node:child_process';
import { cp, glob, mkdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository's root. */
export const root = fileURLToPath(new URL('../../', import.meta.url));

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** npm as a user's shell runs it: without the settings an outer `npm test` passes to its scripts. */
export async function npmIn(cwd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  const { stdout } = await run(npm, args, { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/**
 * Packs Troupe as `npm publish` would, into `work`: from a copy of what `npm pack` reads (package.json, the `files`
 * it lists, the build's tsconfigs and script) with a link to the dependencies, so that `prepack` builds dist/ there
 * and the repository's own dist/, which other tests read, is left alone. Returns the tarball and the files it ships.
 */
export async function packTroupe(work: string): Promise<{ tarball: string; files: string[] }> {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { files: string[] };
  const source = join(work, 'source');
  await mkdir(source);
  const inputs = [
    'package.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'scripts/build-js.ts',
    ...pkg.files.filter((f) => f !== 'dist'),
  ];
  // `files` may hold globs (docs/*.md: the guides, not the site's own package, build or dependencies).
  for (const pattern of inputs)
    for await (const input of glob(pattern, { cwd: root }))
      await cp(join(root, input), join(source, input), { recursive: true });
  await symlink(join(root, 'node_modules'), join(source, 'node_modules'), 'dir');
  const packed = JSON.parse(await npmIn(source, ['pack', '--json', '--pack-destination', work])) as {
    filename: string;
    files: { path: string }[];
  }[];
  const [only] = packed;
  if (only === undefined) throw new Error('npm pack made no tarball');
  return { tarball: join(work, only.filename), files: only.files.map(({ path }) => path) };
}
