/**
 * What a W2 run waiting on its third model call holds, by the property that holds each object: W2's scenario (the
 * benchmark's adapter and model), `runs` runs at once, a V8 heap snapshot taken when every run has made its third
 * model call, and the heap's objects grouped by the name of the first edge found pointing at them (`context`,
 * `children`, `request`, an array index...) with their type and constructor name. Run twice (`runs` and 3 × `runs`),
 * the rows are what the extra runs added, per run: what one more run in flight holds.
 *
 *   node bench/experiments/parked-by-edge.ts <dist> [runs=2000] [--top=40]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { type TroupeModule, troupeFramework } from '../frameworks/troupe-adapter.ts';
import { modelHooks, type Scenario } from '../scenario.ts';

type Counts = Record<string, [nodes: number, bytes: number]>;

const args = process.argv.slice(2);
const top = Number(args.find((arg) => arg.startsWith('--top='))?.slice(6) ?? 40);
const [dist = 'dist', runsArg] = args.filter((arg) => !arg.startsWith('--'));
const runs = Number(runsArg ?? 2000);

interface HeapSnapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
  /** Per closure: its node's offset in `nodes`, its script's id, line and column (all numbers in a row). */
  locations?: number[];
}

/** Counts per (edge name, kind) of the snapshot's nodes, per run. */
function countByEdge(heap: HeapSnapshot, count: number): Counts {
  const {
    node_fields: fields,
    node_types: types,
    edge_fields: edgeFields,
    edge_types: edgeTypes,
  } = heap.snapshot.meta;
  const nf = fields.length;
  const ef = edgeFields.length;
  const [type, name, size, edgeCount] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
    fields.indexOf(f),
  ) as [number, number, number, number];
  const [edgeType, edgeName, edgeTo] = ['type', 'name_or_index', 'to_node'].map((f) =>
    edgeFields.indexOf(f),
  ) as [number, number, number];
  const nodeCount = heap.nodes.length / nf;
  const label = new Array<string | undefined>(nodeCount);
  // A closure is named with where its source is (script id, line and column): anonymous ones are told apart.
  const where = new Map<number, string>();
  const locations = heap.locations ?? [];
  for (let i = 0; i < locations.length; i += 4)
    where.set(
      (locations[i] as number) / nf,
      `@${locations[i + 1]}:${(locations[i + 2] as number) + 1}:${(locations[i + 3] as number) + 1}`,
    );
  const kindOf = (node: number): string => {
    const kind = types[0][heap.nodes[node * nf + type] as number] as string;
    if (kind === 'closure')
      return `closure ${heap.strings[heap.nodes[node * nf + name] as number] || '(anonymous)'}${where.get(node) ?? ''}`;
    return kind === 'object'
      ? `object ${heap.strings[heap.nodes[node * nf + name] as number] || '(anonymous)'}`
      : kind;
  };
  let edge = 0;
  for (let node = 0; node < nodeCount; node++) {
    const parentKind = kindOf(node);
    const edges = heap.nodes[node * nf + edgeCount] as number;
    for (let i = 0; i < edges; i++, edge += ef) {
      const to = (heap.edges[edge + edgeTo] as number) / nf;
      if (label[to] !== undefined) continue;
      const kind = edgeTypes[0][heap.edges[edge + edgeType] as number] as string;
      if (kind === 'weak' || kind === 'shortcut') continue;
      const raw = heap.edges[edge + edgeName] as number;
      const edgeLabel = kind === 'element' || kind === 'hidden' ? `[${kind}]` : (heap.strings[raw] ?? '?');
      label[to] = `${parentKind} .${edgeLabel}`;
    }
  }
  const counts: Counts = {};
  for (let node = 0; node < nodeCount; node++) {
    const key = `${kindOf(node)} <- ${label[node] ?? '(root)'}`;
    const entry = counts[key] ?? [0, 0];
    entry[0] += 1 / count;
    entry[1] += (heap.nodes[node * nf + size] as number) / count;
    counts[key] = entry;
  }
  return counts;
}

/** In the child: parks the runs on their third model call, snapshots the heap, prints the counts per run. */
async function park(count: number): Promise<void> {
  const troupe = (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as TroupeModule;
  const scenario: Scenario = { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 10, toolDelayMs: 0, deltas: 0 };
  const runner = await troupeFramework('troupe-baseline', troupe).prepare(scenario);
  await Promise.all(Array.from({ length: 200 }, (_, i) => runner.run(`warm ${i}`)));
  let calls = 0;
  let counts: Counts | undefined;
  modelHooks.onCall = () => {
    calls++;
    if (calls !== 3 * count) return;
    const file = writeHeapSnapshot(join(tmpdir(), `parked-edge-${process.pid}.heapsnapshot`));
    counts = countByEdge(JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot, count);
    rmSync(file);
  };
  await Promise.all(Array.from({ length: count }, (_, i) => runner.run(`task ${i}`)));
  process.stdout.write(JSON.stringify(counts));
}

if (process.env.PARKED_EDGE_CHILD) await park(Number(process.env.PARKED_EDGE_CHILD));
else {
  const at = (count: number): Counts => {
    const child = spawnSync(process.execPath, [import.meta.filename, dist], {
      env: { ...process.env, PARKED_EDGE_CHILD: String(count) },
      encoding: 'utf8',
      maxBuffer: 256 * 2 ** 20,
    });
    if (child.status !== 0) throw new Error(child.stderr.slice(0, 1000));
    return JSON.parse(child.stdout) as Counts;
  };
  const few = at(runs);
  const more = at(3 * runs);
  const rows = [...new Set([...Object.keys(few), ...Object.keys(more)])].map((key) => {
    const [nodesA, bytesA] = few[key] ?? [0, 0];
    const [nodesB, bytesB] = more[key] ?? [0, 0];
    return { key, nodes: (3 * nodesB - nodesA) / 2, bytes: (3 * bytesB - bytesA) / 2 };
  });
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  console.log(
    `${dist}: ${runs} and ${3 * runs} runs on their third model call; ${total.toFixed(0)} bytes per run`,
  );
  for (const row of rows.sort((a, b) => b.bytes - a.bytes).slice(0, top))
    console.log(`${row.bytes.toFixed(0).padStart(7)}  (${row.nodes.toFixed(2)})  ${row.key}`);
}
