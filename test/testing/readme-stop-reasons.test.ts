import { readFile } from 'node:fs/promises';
import { stopReasons } from 'troupe';
import { describe, expect, it } from 'vitest';

/** The README's list of stop reasons is the closed set, all of it and nothing else. */
describe("the README's stop reasons", () => {
  it('are exactly stopReasons', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const listed = /result\.stopReason; \/\/ ((?:.|\n\/\/)*?) \(the closed set/.exec(readme)?.[1];
    expect(listed).toBeDefined();
    const names = [...(listed ?? '').matchAll(/'([a-z_]+)'/g)].map((match) => match[1]);
    expect(names.toSorted()).toEqual([...stopReasons].toSorted());
  });
});
