/**
 * What a run parked on its first model call holds, by kind of heap object, in two builds of Troupe side by side:
 * each build in its own process parks `runs` runs, takes a V8 heap snapshot and counts nodes and bytes per run by
 * type and constructor; the rows whose bytes per run differ most are printed.
 *
 *   node bench/experiments/parked-heap.ts ../base/dist dist [runs=2000] [--marginal]
 *
 * With --marginal, each build parks `runs` and then 3 × `runs` runs (two processes) and the rows are what the extra
 * runs added, per run: what one more run in flight costs, without the process's fixed heap spread over the runs.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type * as TroupeDist from '../../dist/index.js';

type Counts = Record<string, [nodes: number, bytes: number]>;
type Troupe = Pick<typeof TroupeDist, 'defineAgent' | 'run' | 'tool'>;

const marginal = process.argv.includes('--marginal');
const [first = '', second = '', runsArg] = process.argv.slice(2).filter((arg) => arg !== '--marginal');
const runs = Number(runsArg || 2000);

/** In the child: parks the runs, snapshots the heap and prints the counts per run as JSON. */
async function park(dist: string): Promise<void> {
  const troupe = (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as Troupe;
  const answers: (() => void)[] = [];
  const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };
  const agent = troupe.defineAgent({
    name: 'a',
    instructions: 'i',
    model: {
      provider: 'p',
      model: 'm',
      generate: () =>
        new Promise((answer) => {
          answers.push(() => answer({ text: 'x', toolCalls: [], stopReason: 'end_turn', usage }));
        }),
    },
    tools: [
      troupe.tool({
        name: 'step',
        description: 'd',
        input: z.object({ k: z.number() }),
        execute: async () => 'ok',
      }),
    ],
  });
  const warm = troupe.run(agent, 'warm up');
  while (answers.length === 0) await new Promise((r) => setTimeout(r, 5));
  answers.pop()?.();
  await warm;
  const parked = Array.from({ length: runs }, (_, i) => troupe.run(agent, `task ${i}`));
  while (answers.length < runs) await new Promise((r) => setTimeout(r, 5));
  const { writeHeapSnapshot } = await import('node:v8');
  const file = writeHeapSnapshot(join(tmpdir(), `parked-${process.pid}.heapsnapshot`));
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  rmSync(file);
  const { node_fields: fields, node_types: types } = snapshot.snapshot.meta;
  const [type, name, size] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const counts: Counts = {};
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const kind = types[0][snapshot.nodes[i + type] as number] as string;
    const key =
      kind === 'object' || kind === 'closure'
        ? `${kind} ${snapshot.strings[snapshot.nodes[i + name] as number] || '(anonymous)'}`
        : kind;
    const entry = counts[key] ?? [0, 0];
    entry[0] += 1 / runs;
    entry[1] += (snapshot.nodes[i + size] as number) / runs;
    counts[key] = entry;
  }
  process.stdout.write(JSON.stringify(counts));
  for (const answer of answers) answer();
  await Promise.all(parked);
}

if (process.env.PARKED_HEAP_CHILD) {
  await park(process.env.PARKED_HEAP_CHILD);
} else {
  if (!first || !second)
    throw new Error('usage: node bench/experiments/parked-heap.ts <dist A> <dist B> [runs]');
  const measureAt = (dist: string, count: number): Counts => {
    const child = spawnSync(process.execPath, [import.meta.filename, '', '', String(count)], {
      env: { ...process.env, PARKED_HEAP_CHILD: dist },
      encoding: 'utf8',
      maxBuffer: 64 * 2 ** 20,
    });
    if (child.status !== 0) throw new Error(`${dist}: ${child.stderr.slice(0, 500)}`);
    return JSON.parse(child.stdout) as Counts;
  };
  /** Per run: the whole heap over `runs` runs, or (--marginal) what 2 × `runs` more runs added, over them. */
  const measure = (dist: string): Counts => {
    const base = measureAt(dist, runs);
    if (!marginal) return base;
    const more = measureAt(dist, 3 * runs);
    const added: Counts = {};
    for (const key of new Set([...Object.keys(base), ...Object.keys(more)])) {
      const [nodesA, bytesA] = base[key] ?? [0, 0];
      const [nodesB, bytesB] = more[key] ?? [0, 0];
      added[key] = [(3 * nodesB - nodesA) / 2, (3 * bytesB - bytesA) / 2];
    }
    return added;
  };
  const a = measure(first);
  const b = measure(second);
  const rows = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .map((key) => ({ key, a: a[key] ?? [0, 0], b: b[key] ?? [0, 0] }))
    .filter((row) => row.a[0] >= (marginal ? 0.5 : 1) || row.b[0] >= (marginal ? 0.5 : 1))
    .sort((x, y) => Math.abs(y.b[1] - y.a[1]) - Math.abs(x.b[1] - x.a[1]));
  const total = rows.reduce((sum, row) => sum + row.b[1] - row.a[1], 0);
  const perRun = (side: 'a' | 'b') => rows.reduce((sum, row) => sum + row[side][1], 0).toFixed(0);
  console.log(
    `${runs}${marginal ? ` and ${3 * runs}` : ''} parked runs; bytes per run${marginal ? ' (marginal)' : ''}: ${first} ${perRun('a')}, ${second} ${perRun('b')}; ${second} minus ${first}: ${total.toFixed(0)}`,
  );
  console.log('| heap objects | per run in A | per run in B | bytes per run, B − A |\n|---|---:|---:|---:|');
  for (const row of rows.slice(0, 12))
    console.log(
      `| ${row.key} | ${row.a[0].toFixed(2)} | ${row.b[0].toFixed(2)} | ${(row.b[1] - row.a[1]).toFixed(0)} |`,
    );
  // What B holds most of, per run (objects and bytes), whatever A holds.
  console.log(`\nlargest in ${second}, bytes per run (objects per run):`);
  for (const row of [...rows].sort((x, y) => y.b[1] - x.b[1]).slice(0, 25))
    console.log(`${row.b[1].toFixed(0).padStart(7)}  (${row.b[0].toFixed(2)})  ${row.key}`);
}
