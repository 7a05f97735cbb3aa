import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { defineAgent, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { calculator, documentSearch, sqlQuery } from 'troupe/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
let database: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-builtin-run-'));
  database = join(dir, 'shop.db');
  const db = new DatabaseSync(database);
  db.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);
    INSERT INTO orders (total) VALUES (10), (20.5), (30);`);
  db.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the built-in tools in an agent run', () => {
  it('the model calls each tool; refusals come back as error results and the tools stay available', async () => {
    const hashBefore = createHash('sha256').update(readFileSync(database)).digest('hex');
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'calculator', args: { expression: '1 / 0' } },
          { name: 'sql_query', args: { query: 'WITH x AS (SELECT 1) DELETE FROM orders' } },
        ],
        stopReason: 'tool_use',
      },
      {
        toolCalls: [
          { name: 'calculator', args: { expression: '2 ** 100 // 3 - -7 % 3' } },
          { name: 'sql_query', args: { query: 'SELECT count(*) AS n, sum(total) AS total FROM orders' } },
          { name: 'search_documents', args: { query: 'install on linux with apt' } },
        ],
        stopReason: 'tool_use',
      },
      { text: 'Done: see install.md#1.', stopReason: 'end_turn' },
    ]);
    const agent = defineAgent({
      name: 'assistant',
      instructions: 'Use the tools.',
      model,
      tools: [
        calculator(),
        sqlQuery({ database }),
        documentSearch({ dir: fileURLToPath(new URL('../../fixtures/docs/', import.meta.url)) }),
      ],
    });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({
      status: 'completed',
      stopReason: 'completed',
      text: 'Done: see install.md#1.',
    });

    // The model was told the schema, and every tool was still offered after the refusals.
    expect(model.requests[0]?.tools.find((spec) => spec.name === 'sql_query')?.description).toContain(
      'orders(id INTEGER PRIMARY KEY, total REAL)',
    );
    expect(model.requests[1]?.tools.map((spec) => spec.name).sort()).toEqual([
      'calculator',
      'search_documents',
      'sql_query',
    ]);

    const [refusals, answers] = result.steps;
    expect(refusals?.toolCalls.map((call) => [call.isError, call.result])).toEqual([
      [true, 'Error: ZeroDivisionError: division by zero.'],
      [true, expect.stringMatching(/^Error: Query refused: DELETE cannot appear in a read-only query/)],
    ]);
    const [calc, sql, search] = answers?.toolCalls ?? [];
    expect(calc).toMatchObject({ isError: false, result: '422550200076076467165567735123' });
    expect(JSON.parse(sql?.result ?? '')).toEqual({
      columns: ['n', 'total'],
      rows: [[3, 60.5]],
      rowCount: 1,
    });
    const found = JSON.parse(search?.result ?? '') as {
      results: { source: string; heading: string; citation: string }[];
    };
    expect(found.results[0]).toMatchObject({ source: 'install.md', heading: 'Installation > Linux' });
    expect(found.results[0]?.citation).toMatch(/^install\.md#1 \(\d+-\d+\) Installation > Linux$/);

    expect(createHash('sha256').update(readFileSync(database)).digest('hex')).toBe(hashBefore);
  });
});
