/**
 * Self time of a CPU profile (from w1-loop.ts) by source module: a bundled chunk's functions are mapped to the
 * module esbuild marks them with (`// src/...`), so the step's cost reads by file (the engine, the agent machine,
 * each gate, XState's actor, zod, Node's internals) rather than by function name. Shares of the profile, and µs
 * per tool step at the profile's own (slowed) pace.
 *
 *   node bench/experiments/self-time-by-module.ts <profile.cpuprofile> [tool steps in it=3000] [rows=50]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

const [file, stepsArg, rowsArg] = process.argv.slice(2);
if (!file) throw new Error('usage: self-time-by-module.ts <profile.cpuprofile> [tool steps] [rows]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
};
const steps = Number(stepsArg ?? 3000);

/** Per bundled file, the lines where each source module starts. */
const markers = new Map<string, [number, string][]>();

function moduleOf(url: string, line: number): string {
  if (url === '') return '(V8)';
  if (url.includes('xstate'))
    return `xstate: ${url.slice(url.lastIndexOf('/') + 1).replace(/-[0-9a-f]+\.cjs\.js$/, '')}`;
  if (url.includes('/zod/')) return 'zod';
  if (url.startsWith('node:')) return url;
  // Troupe's bundled files (a dist folder's .js); the benchmark's own .ts files by name.
  if (!url.startsWith('file:') || !url.endsWith('.js')) return url.slice(url.lastIndexOf('/') + 1);
  let starts = markers.get(url);
  if (!starts) {
    starts = [];
    const lines = readFileSync(fileURLToPath(url), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const marker = /^\/\/ (src\/\S+)/.exec(lines[i] as string);
      if (marker) starts.push([i, marker[1] as string]);
    }
    markers.set(url, starts);
  }
  let found = url.slice(url.lastIndexOf('/') + 1);
  for (const [start, name] of starts) {
    if (start > line) break;
    found = name;
  }
  return found;
}

let total = 0;
const byModule = new Map<string, number>();
for (const node of profile.nodes) {
  const hits = node.hitCount ?? 0;
  total += hits;
  if (hits === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const key = functionName.startsWith('(') ? functionName : moduleOf(url, lineNumber);
  byModule.set(key, (byModule.get(key) ?? 0) + hits);
}
const usPerSample = (profile.endTime - profile.startTime) / total;
console.log(
  `${total} samples, ${((profile.endTime - profile.startTime) / steps).toFixed(1)} µs per tool step`,
);
for (const [key, hits] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, Number(rowsArg ?? 50)))
  console.log(
    `${((100 * hits) / total).toFixed(1).padStart(5)} %  ${((hits * usPerSample) / steps).toFixed(2).padStart(6)} µs  ${key}`,
  );
