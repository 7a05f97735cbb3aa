import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

async function runExample(file: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [tsx, file], { cwd: root, timeout: 20_000 });
  return stdout;
}

describe('examples/pii-masking.ts', () => {
  it('shows placeholders in events, the real value in the result', async () => {
    const out = await runExample('examples/pii-masking.ts');
    expect(out).toContain("tool_call { to: '<EMAIL_1>', body: 'Card <CARD_1> is blocked.' }");
    expect(out).toContain('tool_response sent to <EMAIL_1>');
    expect(out).toContain('redaction model { email: 1, card: 1 }');
    expect(out).toContain('result Done: I wrote to bob@example.com.');
    expect(out.split('result')[0]).not.toContain('bob@example.com');
  });
});
