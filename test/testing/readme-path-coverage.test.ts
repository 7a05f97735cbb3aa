import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** The README's test-kit example is examples/path-coverage.ts, and it runs: every path, then complete coverage. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

describe("the README's path coverage example", () => {
  it('is examples/path-coverage.ts, word for word, and runs every path to complete coverage', async () => {
    const readme = await readFile(new URL('README.md', `file://${root}`), 'utf8');
    const section = readme.slice(readme.indexOf('## Testing your agents'));
    const block = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf('\n## ', 3)))?.[1];
    const example = await readFile(new URL('examples/path-coverage.ts', `file://${root}`), 'utf8');
    expect(block).toBe(example);
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, 'examples/path-coverage.ts'], {
      cwd: root,
      timeout: 20_000,
    });
    expect(stdout).toMatch(/^\d+ paths, \d+ transitions covered\n$/);
  });
});
