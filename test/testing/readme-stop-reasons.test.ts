import { readFile } from 'node:fs/promises';
import { type StopReason, statusOf, stopReasons } from 'troupe';
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

  it("and the table of the loop's guide lists exactly stopReasons, each with its status", async () => {
    const guide = await readFile(new URL('../../docs/the-loop.md', import.meta.url), 'utf8');
    const rows = [...guide.matchAll(/^\| `'([a-z_]+)'` \| ([a-z]+) \|/gm)];
    expect(rows.map((row) => row[1]).toSorted()).toEqual([...stopReasons].toSorted());
    for (const [, reason, status] of rows) expect(statusOf(reason as StopReason), reason).toBe(status);
  });
});
