import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineAgent } from 'troupe';
import { serveMcp } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

/** The conformance CLI of a pinned dev dependency, run with this Node. */
function conformanceCli(suite: string): string {
  const manifest = require.resolve(`${suite}/package.json`);
  const { bin } = require(manifest) as { bin: string | Record<string, string> };
  return join(dirname(manifest), typeof bin === 'string' ? bin : (bin.conformance as string));
}

function runCli(suite: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [conformanceCli(suite), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      output += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      output += text;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

/** Both pinned versions of the suite: 0.1.16, and the 2026-07-28 line (0.2.0-alpha.12). */
const suites = [
  { suite: '@modelcontextprotocol/conformance', failures: 'serve-expected-failures.yml' },
  { suite: '@modelcontextprotocol/conformance-next', failures: 'serve-expected-failures.yml' },
];

describe.each(suites)('serveMcp against $suite (server scenarios)', ({ suite, failures }) => {
  it('passes every active server scenario except the listed ones, each listed with its reason', async () => {
    const greeter = defineAgent({
      name: 'greeter',
      description: 'Greets',
      instructions: '',
      model: scriptedModel([{ text: 'hello' }], { loop: true }),
    });
    const serving = await serveMcp(greeter, { transport: { type: 'http', host: '127.0.0.1' } });
    const results = await mkdtemp(join(tmpdir(), 'troupe-conformance-'));
    try {
      const expected = fileURLToPath(new URL(`./conformance/${failures}`, import.meta.url));
      const { code, output } = await runCli(suite, [
        'server',
        '--url',
        serving.url as string,
        '--expected-failures',
        expected,
        '-o',
        results,
      ]);
      const summary = output.slice(output.indexOf('=== SUMMARY ==='));
      // Exit 0: every failure is listed, and every listed scenario still fails (a pass would make the list stale).
      expect(code, summary).toBe(0);
      for (const scenario of [
        'server-initialize',
        'ping',
        'tools-list',
        'logging-set-level',
        'resources-list',
      ])
        expect(summary).toMatch(new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`));
      expect(summary).toMatch(/✓ dns-rebinding-protection: 2 passed, 0 failed/);
    } finally {
      await serving.close();
      await rm(results, { recursive: true, force: true });
    }
  }, 120_000);
});
