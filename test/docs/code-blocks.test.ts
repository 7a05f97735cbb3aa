import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * Every TypeScript block of the README and of docs/ is checked. A block is either an example shown word for word
 * (`<!-- example: examples/x.ts -->` on the line above it: the examples are type-checked by
 * `npm run typecheck:examples` and each one shown is run here, offline, without an API key), or a sketch marked
 * `<!-- not runnable: why -->` (it needs an API key, a server, or the reader's own agents), which is type-checked
 * here on its own, with the names it takes from the text around it declared in test/docs/stand-ins. An unmarked
 * block fails.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = join(root, 'node_modules/tsx/dist/cli.mjs');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

interface CodeBlock {
  page: string;
  line: number;
  marker: string | undefined;
  code: string;
}

/** README.md and every page under docs/, leaving out what is not written by hand (dependencies, the API reference). */
function pages(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.md') && !/^(node_modules|api|\.vitepress)(\/|$)/.test(path))
    .map((path) => `docs/${path}`);
  return ['README.md', ...docs.sort()];
}

/** The ```ts blocks of a Markdown text, each with the HTML comment on the line just above it, if any. */
function codeBlocks(page: string, text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  for (const match of text.matchAll(/(?:<!-- (.*?) -->\n)?```(?:ts|typescript)\n([\s\S]*?)```/g))
    blocks.push({
      page,
      line: text.slice(0, match.index).split('\n').length,
      marker: match[1],
      code: match[2] as string,
    });
  return blocks;
}

const blocks = pages().flatMap((page) => codeBlocks(page, readFileSync(join(root, page), 'utf8')));
const where = (block: CodeBlock): string => `${block.page}:${block.line}`;
const shown = new Map<string, CodeBlock>();
for (const block of blocks) {
  const path = /^example: (\S+)$/.exec(block.marker ?? '')?.[1];
  if (path !== undefined && !shown.has(path)) shown.set(path, block);
}

describe('the code blocks of the README and of docs/', () => {
  it('finds the pages and their blocks', () => {
    expect(pages()).toContain('docs/getting-started.md');
    expect(blocks.length).toBeGreaterThan(20);
  });

  it('are each an example file or marked not runnable, with a reason', () => {
    const unmarked = blocks
      .filter((block) => !/^(example: examples\/\S+\.ts|not runnable: \S.{9,})$/.test(block.marker ?? ''))
      .map(where);
    expect(unmarked).toEqual([]);
  });

  it('marked as an example, are that file word for word', () => {
    for (const block of blocks) {
      const path = /^example: (\S+)$/.exec(block.marker ?? '')?.[1];
      if (path === undefined) continue;
      expect(existsSync(join(root, path)), `${where(block)}: ${path}`).toBe(true);
      expect(block.code, where(block)).toBe(readFileSync(join(root, path), 'utf8'));
    }
  });

  // examples/testing/*.test.ts are test files: vitest runs them (the examples project), not tsx.
  const runnable = [...shown.keys()].filter((path) => !path.endsWith('.test.ts'));
  it.each(runnable)('%s runs without an API key and writes nothing to stderr', async (path) => {
    const env = { ...process.env };
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'])
      delete env[key];
    const { stderr } = await promisify(execFile)(process.execPath, [tsx, path], {
      cwd: root,
      env,
      timeout: 30_000,
    });
    expect(stderr).toBe('');
  });

  it('marked not runnable, type-check strictly on their own, with only the stand-ins of test/docs/stand-ins', async () => {
    const sketches = blocks.filter((block) => block.marker?.startsWith('not runnable: '));
    expect(sketches.length).toBeGreaterThan(10);
    // Inside the repository, so that `zod` and the Restate SDK resolve from its node_modules; gitignored.
    const dir = join(root, '.docs-blocks');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    try {
      const names = new Map<string, CodeBlock>();
      for (const block of sketches) {
        const name = `${block.page.replace(/[/.]/g, '-')}-${block.line}.ts`;
        names.set(name, block);
        writeFileSync(join(dir, name), block.code);
      }
      const standIns = join(root, 'test/docs/stand-ins');
      for (const name of readdirSync(standIns)) copyFileSync(join(standIns, name), join(dir, name));
      const entryPoints = ['', '/testing', '/providers', '/mcp', '/tools', '/restate'];
      const sources = ['index', 'testing/index', 'providers/index', 'tools/mcp/index', 'tools/builtin/index'];
      const paths = Object.fromEntries(
        entryPoints.map((subpath, i) => [`troupe${subpath}`, [`../src/${sources[i] ?? 'restate/index'}.ts`]]),
      );
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          extends: '../tsconfig.json',
          // Each sketch is a module of its own, even one without imports.
          compilerOptions: { moduleDetection: 'force', noEmit: true, paths },
          include: [],
          files: readdirSync(dir).filter((name) => name.endsWith('.ts')),
        }),
      );
      const errors = await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], {
        cwd: root,
        timeout: 120_000,
      }).then(
        () => '',
        (failed: { stdout?: string }) => failed.stdout ?? String(failed),
      );
      // Name the page and line of each sketch that does not compile.
      const located = errors.replace(/\.docs-blocks\/([\w-]+\.ts)/g, (whole, name: string) => {
        const block = names.get(name);
        return block === undefined ? whole : `${where(block)} (${name})`;
      });
      expect(located).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
