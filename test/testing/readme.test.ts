import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';

/**
 * The README's first TypeScript block is what a new user copies first: it must run as written. It is also
 * examples/first-agent.ts, so the examples type-check (under exactOptionalPropertyTypes) covers it too.
 */
const root = new URL('../../', import.meta.url);

async function firstTypeScriptBlock(): Promise<string> {
  const readme = await readFile(new URL('README.md', root), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md has no ```ts block');
  return block;
}

describe("the README's first example", () => {
  afterEach(() => vi.restoreAllMocks());

  it('is examples/first-agent.ts, word for word', async () => {
    const example = await readFile(new URL('examples/first-agent.ts', root), 'utf8');
    expect(await firstTypeScriptBlock()).toBe(example);
  });

  it('runs: run() then stream() on the same agent both complete with the typed output, and text streams', async () => {
    const logged: unknown[][] = [];
    const written: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      logged.push(args);
    });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    await import('../../examples/first-agent.ts');
    vi.restoreAllMocks();
    expect(logged).toEqual([
      ['completed', { total: 5 }],
      ['\ncompleted', { total: 5 }],
    ]);
    // The scripted text arrives as deltas, in more than one piece.
    expect(written.join('')).toBe('{"total": 5}');
    expect(written.length).toBeGreaterThan(1);
  });
});
