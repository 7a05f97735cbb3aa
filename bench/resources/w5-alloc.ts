/**
 * Bytes allocated per model call in W5's path at S sessions, with and without a shared resource manager, by source
 * site (V8's sampling heap profiler, freed objects included): the sites the manager adds, largest first.
 *
 *   npm run build && node --expose-gc bench/resources/w5-alloc.ts [sessions=10000] [rows=40] [dist=dist]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allocationBySite, sampleAllocations } from '../experiments/allocation-by-site.ts';
import { callsPerRun, inPathLeg, roundsFor, type W5Module, w5Runner } from '../w5.ts';

const sessions = Number(process.argv[2] ?? 10_000);
const rows = Number(process.argv[3] ?? 40);
const dist = process.argv[4] ?? 'dist';
const troupe = (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as W5Module;
const runner = w5Runner(troupe);
await inPathLeg(troupe, runner, 100, 5, true);
await inPathLeg(troupe, runner, 100, 5, false);
const rounds = roundsFor(sessions, 40_000);
const calls = sessions * rounds * callsPerRun;
const side = async (withManager: boolean) => {
  const { head } = await sampleAllocations(1024, () =>
    inPathLeg(troupe, runner, sessions, rounds, withManager),
  );
  return allocationBySite(head);
};
const withRm = await side(true);
const without = await side(false);
console.log(
  `bytes per call: with ${(withRm.total / calls).toFixed(0)}, without ${(without.total / calls).toFixed(0)}`,
);
const base = new Map(without.sites);
const added = withRm.sites
  .map(([site, bytes]) => [site, (bytes - (base.get(site) ?? 0)) / calls] as const)
  .sort((a, b) => b[1] - a[1]);
for (const [site, perCall] of added.slice(0, rows))
  console.log(`${perCall.toFixed(0).padStart(6)} B  ${site}`);
