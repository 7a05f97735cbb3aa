import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** The guardrails example of docs/safety.md is examples/guardrails.ts, and it runs without an API key. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

describe('the guardrails example of the safety guide', () => {
  it('is examples/guardrails.ts, word for word, and runs: the card number is never streamed', async () => {
    const readme = await readFile(new URL('docs/safety.md', `file://${root}`), 'utf8');
    const section = readme.slice(readme.indexOf('## Guardrails'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const example = await readFile(new URL('examples/guardrails.ts', `file://${root}`), 'utf8');
    expect(block).toBe(example);
    const env = { ...process.env };
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'])
      delete env[key];
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, 'examples/guardrails.ts'], {
      cwd: root,
      env,
      timeout: 20_000,
    });
    expect(stdout).toBe(
      'Your card on file is \n[no-card-numbers: block, matched the blocked pattern /\\b(?:\\d{4}[ -]?){3}\\d{4}\\b/]\nguardrail_blocked no-card-numbers\n',
    );
  });
});
