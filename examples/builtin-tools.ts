import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { defineAgent, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { calculator, documentSearch, sqlQuery } from 'troupe/tools';

// A small shop database (any existing SQLite file works: the tool opens it read-only).
const dir = mkdtempSync(join(tmpdir(), 'troupe-example-'));
const database = join(dir, 'shop.db');
const db = new DatabaseSync(database);
db.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);
  INSERT INTO orders (customer, total) VALUES ('Ada', 120.5), ('Grace', 80), ('Ada', 42);`);
db.close();

const agent = defineAgent({
  name: 'analyst',
  instructions: 'Answer from the data and the docs; cite the passages you use.',
  // Or a real model: openai('gpt-5-mini'). The scripted one plays the calls a model would make.
  model: scriptedModel([
    {
      toolCalls: [
        {
          name: 'sql_query',
          args: { query: "SELECT sum(total) AS spent FROM orders WHERE customer = 'Ada'" },
        },
        { name: 'calculator', args: { expression: '162.5 * 0.2' } },
        { name: 'search_documents', args: { query: 'refund delay' } },
      ],
      stopReason: 'tool_use',
    },
    {
      text: 'Ada spent 162.5, so her 20% voucher is 32.5; refunds take 14 days (refunds#0).',
      stopReason: 'end_turn',
    },
  ]),
  tools: [
    calculator(),
    sqlQuery({ database }), // its description lists the tables: orders(id INTEGER PRIMARY KEY, customer TEXT, total REAL)
    documentSearch({
      documents: [
        { id: 'refunds', text: '# Refunds\n\nRefunds are paid within 14 days to the original card.' },
      ],
    }),
  ],
});

const result = await run(agent, 'How much did Ada spend, what is 20% of it, and how long do refunds take?');
for (const call of result.steps[0]?.toolCalls ?? []) console.log(call.name, '->', call.result);
console.log(result.text);
rmSync(dir, { recursive: true, force: true });
