import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** `npm start` and the other examples must work on a fresh clone, with no API key: they run on scripted models. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

async function runExample(file: string): Promise<string> {
  const env = { ...process.env };
  for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'])
    delete env[key];
  const { stdout } = await promisify(execFile)(process.execPath, [tsx, file], {
    cwd: root,
    env,
    timeout: 20_000,
  });
  return stdout;
}

describe('the examples run without an API key', () => {
  it('npm start (examples/quickstart.ts) streams a run and completes with the typed output', async () => {
    const out = await runExample('examples/quickstart.ts');
    expect(out).toContain('Model: the built-in scripted model (no API key set)');
    expect(out).toContain('run_end completed / completed');
    expect(out).toContain("output: { city: 'Paris', fahrenheit: 64, summary: 'Clear skies, 64°F.' }");
    expect(out).toContain('I will look up the weather first.');
  });

  it('examples/multi-agent.ts hands off, delegates and answers a follow-up', async () => {
    const out = await runExample('examples/multi-agent.ts');
    expect(out).toContain('Answered by support; path triage -> support');
    expect(out).toContain('Follow-up answered by support: You are welcome!');
    expect(out).toContain('Sessions after shutdown: 0');
  });
});
