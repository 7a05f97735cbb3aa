/**
 * W5 in the path, two builds in one process: what the resource manager adds per model call with S concurrent runs
 * (3 tool steps and an answer, instant model and tool), for a base build and this one, alternated so that both see
 * the same machine. Each pair of a build is its S runs without and with a shared manager back to back; each
 * repetition runs one pair of each build, in an order that rotates from one repetition to the next; a full GC
 * precedes every leg. Prints, per build and size, the median and quartiles of the per-pair difference in wall and
 * CPU time per model call, and the ratio of this build's medians to the base's.
 *
 *   npm run build && node --expose-gc bench/resources/w5-paired.ts <base dist> [this dist=dist] [reps=9] [sizes=10000]
 *   e.g. node --expose-gc bench/resources/w5-paired.ts /work/main/.troupe/base-5cd9026 dist 9 1,100,10000
 */
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { addedPerCall, callsPerRun, inPathLeg, type Leg, roundsFor, type W5Module, w5Runner } from '../w5.ts';

const [baseDir, thisDir = 'dist', repsArg = '9', sizesArg = '10000'] = process.argv.slice(2);
if (baseDir === undefined) throw new Error('usage: w5-paired.ts <base dist> [this dist] [reps] [sizes]');
if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with node --expose-gc');
const reps = Number(repsArg);
const sizes = sizesArg.split(',').map(Number);
const load = async (dir: string) =>
  (await import(pathToFileURL(join(resolve(dir), 'index.js')).href)) as W5Module;
const builds = [
  { name: 'base', troupe: await load(baseDir) },
  { name: 'this', troupe: await load(thisDir) },
].map((build) => ({ ...build, runner: w5Runner(build.troupe) }));

const callsPerLeg = 40_000;
console.log(`load ${loadavg()[0]?.toFixed(2)} at ${new Date().toISOString()}; ${reps} reps`);
// Warm-up: both builds, both legs.
for (const build of builds) {
  await inPathLeg(build.troupe, build.runner, 100, 5, true);
  await inPathLeg(build.troupe, build.runner, 100, 5, false);
}
for (const sessions of sizes) {
  const rounds = roundsFor(sessions, callsPerLeg);
  const calls = sessions * rounds * callsPerRun;
  const wall = new Map(builds.map((b) => [b.name, [] as number[]]));
  const cpu = new Map(builds.map((b) => [b.name, [] as number[]]));
  for (let rep = 0; rep < reps; rep++) {
    // Rotate both which build goes first and which leg goes first.
    const order = rep % 2 === 0 ? builds : [...builds].reverse();
    const withFirst = rep % 4 >= 2;
    for (const build of order) {
      const first: Leg = await inPathLeg(build.troupe, build.runner, sessions, rounds, withFirst);
      const second: Leg = await inPathLeg(build.troupe, build.runner, sessions, rounds, !withFirst);
      const [withRm, without] = withFirst ? [first, second] : [second, first];
      wall.get(build.name)?.push(withRm.wallMs - without.wallMs);
      cpu.get(build.name)?.push(withRm.cpuMs - without.cpuMs);
    }
  }
  const fmt = (x: number) => x.toFixed(1);
  const rows = builds.map((b) => ({
    name: b.name,
    wall: addedPerCall(wall.get(b.name) ?? [], calls),
    cpu: addedPerCall(cpu.get(b.name) ?? [], calls),
  }));
  for (const row of rows)
    console.log(
      `S=${sessions} ${row.name}: added wall ${fmt(row.wall.median)} µs/call (${fmt(row.wall.q1)}–${fmt(row.wall.q3)}), ` +
        `CPU ${fmt(row.cpu.median)} (${fmt(row.cpu.q1)}–${fmt(row.cpu.q3)})`,
    );
  const [base, mine] = rows;
  if (base && mine)
    console.log(
      `S=${sessions} this/base: wall ${(mine.wall.median / base.wall.median).toFixed(2)}, CPU ${(mine.cpu.median / base.cpu.median).toFixed(2)}`,
    );
}
console.log(`load ${loadavg()[0]?.toFixed(2)} at ${new Date().toISOString()}`);
