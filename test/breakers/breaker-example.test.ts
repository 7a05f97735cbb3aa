import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

describe('examples/circuit-breakers.ts', () => {
  it('falls back while the model breaker is open, and answers tool calls at once while the tool breaker is', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [tsx, 'examples/circuit-breakers.ts'], {
      cwd: root,
      timeout: 20_000,
    });
    expect(stdout).toContain('three → answered by the fallback');
    expect(stdout).toContain('breaker acme:big is open');
    expect(stdout).toContain('call 2: Error: tool "inventory" failed after 1 attempt(s)');
    expect(stdout).toMatch(/call 3: Error: tool "inventory" is unavailable right now/);
  });
});
