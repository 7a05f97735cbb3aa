import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, type ToolContext, ToolInputError } from 'troupe';
import { type DocumentSearchResult, documentSearch } from 'troupe/tools';
import { describe, expect, it } from 'vitest';
import { chunkMarkdown } from '../../../src/tools/builtin/markdown-chunks.ts';

const dir = fileURLToPath(new URL('../../fixtures/docs/', import.meta.url));
const context = { signal: new AbortController().signal } as ToolContext;

async function search(query: string, options: Parameters<typeof documentSearch>[0] = { dir }) {
  return (await documentSearch(options).execute({ query }, context)) as DocumentSearchResult;
}

describe('chunkMarkdown', () => {
  it('keeps heading paths (ATX and setext), ignores # lines in code, and covers the text with offsets', () => {
    const text = readFileSync(`${dir}install.md`, 'utf8');
    const chunks = chunkMarkdown(text, 1200);
    expect(chunks.map((chunk) => chunk.headings.join(' > '))).toEqual([
      'Installation',
      'Installation > Linux',
      'Installation > macOS',
      'Installation > Windows',
      'Uninstalling',
    ]);
    expect(text.slice(chunks[1]?.start, chunks[1]?.end)).toMatch(
      /^## Linux\n[\s\S]*shell comment, not a heading[\s\S]*systemd\.\n\n$/,
    );
    // Contiguous and complete: every character belongs to one chunk.
    expect(chunks[0]?.start).toBe(0);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]?.start).toBe(chunks[i - 1]?.end);
    expect(chunks.at(-1)?.end).toBe(text.length);

    const setext = chunkMarkdown(readFileSync(`${dir}configuration.md`, 'utf8'), 1200);
    expect(setext.map((chunk) => chunk.headings.join(' > '))).toEqual([
      'Configuration',
      'Configuration > Environment variables',
      'Configuration > Budgets',
    ]);
  });

  it('cuts a long section between paragraphs, then sentences, never past the limit', () => {
    const paragraph = 'Water boils at one hundred degrees at sea level. '.repeat(12);
    const text = `# Long\n\n${paragraph}\n\n${paragraph}\n\n${'x'.repeat(900)}`;
    const chunks = chunkMarkdown(text, 400);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.end - chunk.start).toBeLessThanOrEqual(400);
      expect(chunk.headings).toEqual(['Long']);
    }
    expect(chunks.map((chunk) => text.slice(chunk.start, chunk.end)).join('')).toBe(text);
    // Sentence boundaries are preferred to cutting words.
    expect(text.slice(chunks[1]?.start, chunks[1]?.end)).toMatch(/^Water/);
  });
});

describe('documentSearch over a folder', () => {
  it('finds the right chunk for each question and cites it', async () => {
    const expectations: readonly [query: string, source: string, heading: string, contains: string][] = [
      [
        'how do I install it on Linux with apt',
        'install.md',
        'Installation > Linux',
        'apt-get install kettle',
      ],
      ['homebrew apple silicon', 'install.md', 'Installation > macOS', 'brew install kettle'],
      [
        'which environment variable holds the API key',
        'configuration.md',
        'Configuration > Environment variables',
        'KETTLE_API_KEY',
      ],
      [
        'ECONNRESET connection closed retries',
        'guides/troubleshooting.md',
        'Troubleshooting > Connection errors',
        'exponential',
      ],
      ['budget exhausted water per day', 'configuration.md', 'Configuration > Budgets', 'litres'],
      ['descaling citric acid', 'notes.txt', '', 'once a month'],
    ];
    for (const [query, source, heading, contains] of expectations) {
      const { results } = await search(query);
      const top = results[0];
      expect(top, query).toBeDefined();
      expect({ query, source: top?.source, heading: top?.heading }).toEqual({ query, source, heading });
      expect(top?.text).toContain(contains);
      // The offsets point at exactly the returned text in the file.
      const file = readFileSync(`${dir}${source}`, 'utf8');
      expect(file.slice(top?.start, top?.end)).toBe(top?.text);
      expect(top?.citation).toBe(
        `${source}#${top?.chunk} (${top?.start}-${top?.end})${heading === '' ? '' : ` ${heading}`}`,
      );
    }
  });

  it('returns at most topK results, skips hidden folders, and titles files by their first heading', async () => {
    const { results } = await search('kettle');
    expect(results).toHaveLength(5);
    const few = await search('kettle', { dir, topK: 2 });
    expect(few.results).toHaveLength(2);
    const hidden = await search('secret passwords');
    expect(hidden.results.some((hit) => hit.source.includes('.hidden'))).toBe(false);
    const linux = (await search('apt repository')).results[0];
    expect(linux?.title).toBe('Installation');
  });

  it('an empty query is an error result; no match is an empty list', async () => {
    await expect(search('   ')).rejects.toThrow(ToolInputError);
    expect((await search('zyzzyva')).results).toEqual([]);
  });
});

describe('documentSearch over given documents', () => {
  const documents = [
    {
      id: 'refunds',
      title: 'Refund policy',
      text: '# Refunds\n\nRefunds are paid within 14 days to the original card.',
    },
    { id: 'shipping', text: '# Shipping\n\n## Abroad\n\nParcels abroad take 5 to 9 working days.' },
  ];

  it('cites the document id and heading', async () => {
    const { results } = await search('how long does delivery abroad take parcels', { documents });
    expect(results[0]).toMatchObject({
      source: 'shipping',
      title: 'Shipping',
      heading: 'Shipping > Abroad',
      chunk: 1,
    });
    const refund = (await search('refunds card', { documents })).results[0];
    expect(refund).toMatchObject({ source: 'refunds', title: 'Refund policy', chunk: 0 });
  });

  it('with embed, fuses keyword and vector rankings: a synonym with no shared word is found', async () => {
    // A toy embedding: one dimension per concept, so "money back" lands near "refunds" without sharing a word.
    const concepts = [
      /refund|money back|reimburse/i,
      /ship|deliver|parcel/i,
      /abroad|overseas|international/i,
    ];
    const embed = (texts: string[]): number[][] =>
      texts.map((text) => concepts.map((concept) => (concept.test(text) ? 1 : 0)));
    const keywordOnly = await search('money back', { documents });
    expect(keywordOnly.results).toEqual([]);
    const hybrid = await search('money back', { documents, embed });
    expect(hybrid.results[0]?.source).toBe('refunds');
    const overseas = await search('overseas', { documents, embed });
    expect(overseas.results[0]).toMatchObject({ source: 'shipping', heading: 'Shipping > Abroad' });
  });

  it('a broken embed function fails the call with a clear message', async () => {
    const embed = (texts: string[]): number[][] => texts.slice(1).map(() => [1]);
    await expect(search('refunds', { documents, embed })).rejects.toThrow(
      /embed returned 2 vectors for 3 texts/,
    );
  });

  it('bad options are ConfigErrors', () => {
    expect(() => documentSearch({} as never)).toThrow(/either documents or dir/);
    expect(() => documentSearch({ documents, dir })).toThrow(/either documents or dir/);
    expect(() => documentSearch({ dir: `${dir}missing` })).toThrow(ConfigError);
    expect(() =>
      documentSearch({
        documents: [
          { id: 'a', text: 'x' },
          { id: 'a', text: 'y' },
        ],
      }),
    ).toThrow(/two documents have the id "a"/);
    expect(() => documentSearch({ documents, topk: 3 } as never)).toThrow(/did you mean "topK"/);
  });
});
