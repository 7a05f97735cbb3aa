import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { zod } from '../../src/core/zod.ts';
import { tool } from '../../src/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

/** Imports one entry point in a fresh process and tells whether zod got loaded (it marks the global object). */
async function loadsZod(entry: string, then = ''): Promise<boolean> {
  const script = `await import(${JSON.stringify(entry)}); ${then} process.stdout.write(String(globalThis.__zod_globalRegistry !== undefined));`;
  const { stdout } = await promisify(execFile)(process.execPath, [tsx, '--input-type=module', '-e', script], {
    cwd: root,
    timeout: 30_000,
  });
  return stdout.trim() === 'true';
}

describe('zod is loaded on first use', () => {
  it.each(['src/index.ts', 'src/providers/index.ts', 'src/testing/index.ts', 'src/tools/builtin/index.ts'])(
    'importing %s does not load zod',
    async (entry) => {
      expect(await loadsZod(`./${entry}`)).toBe(false);
    },
  );

  it('a built-in tool that needs zod loads it when it is made', async () => {
    const made = "const { calculator } = await import('./src/tools/builtin/index.ts'); calculator();";
    expect(await loadsZod('./src/index.ts', made)).toBe(true);
  });

  it('is the application’s own zod module, so its schemas and descriptions are the ones Troupe reads', () => {
    expect(zod()).toBe(z);
    const described = tool({
      name: 'lookup',
      description: 'Looks a word up.',
      input: z.object({ word: z.string().describe('The word.') }),
      execute: ({ word }) => word,
    });
    expect(described.parameters).toMatchObject({ properties: { word: { description: 'The word.' } } });
  });
});
