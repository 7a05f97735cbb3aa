import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** The run context example of docs/safety.md is examples/run-context.ts, and it runs without an API key. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

describe('the run context, permissions and audit log examples of the safety guide', () => {
  it('is examples/run-context.ts, word for word, and runs', async () => {
    const readme = await readFile(new URL('docs/safety.md', `file://${root}`), 'utf8');
    const section = readme.slice(readme.indexOf('### Run context'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const example = await readFile(new URL('examples/run-context.ts', `file://${root}`), 'utf8');
    expect(block).toBe(example);
    const env = { ...process.env };
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'])
      delete env[key];
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, 'examples/run-context.ts'], {
      cwd: root,
      env,
      timeout: 20_000,
    });
    expect(stdout).toBe('You have one order.\n');
  });

  it('the permissions and audit log example is examples/permissions-audit.ts, and runs', async () => {
    const readme = await readFile(new URL('docs/safety.md', `file://${root}`), 'utf8');
    const section = readme.slice(readme.indexOf('### The audit log'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const example = await readFile(new URL('examples/permissions-audit.ts', `file://${root}`), 'utf8');
    expect(block).toBe(example);
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, 'examples/permissions-audit.ts'], {
      cwd: root,
      timeout: 20_000,
    });
    expect(stdout).toBe(
      'Error: permission denied: the call to "refund" was not run: role "user" may not call "refund"\n{ ok: true, count: 1 }\n',
    );
  });
});
