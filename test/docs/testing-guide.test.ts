import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/testing.md shows the test files of examples/testing, which run in CI: each code block marked
 * `<!-- example: path -->` must be that file, word for word, and every example file must be shown.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const guide = readFileSync(`${root}docs/testing.md`, 'utf8');

function shownExamples(): Map<string, string> {
  const shown = new Map<string, string>();
  for (const match of guide.matchAll(/<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```/g))
    shown.set(match[1] as string, match[2] as string);
  return shown;
}

describe('the testing guide', () => {
  it('shows every example of examples/testing exactly as the file is', () => {
    const shown = shownExamples();
    const files = readdirSync(`${root}examples/testing`)
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `examples/testing/${name}`)
      .sort();
    expect(files.length).toBeGreaterThan(3);
    expect([...shown.keys()].sort()).toEqual(files);
    for (const [path, block] of shown) expect(block, path).toBe(readFileSync(`${root}${path}`, 'utf8'));
  });

  it("is linked from the README's section on testing", () => {
    const readme = readFileSync(`${root}README.md`, 'utf8');
    const section = readme.slice(readme.indexOf('## Testing your agents'));
    expect(section.slice(0, section.indexOf('\n## ', 3))).toContain('](docs/testing.md)');
  });
});
