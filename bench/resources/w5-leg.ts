/**
 * One side of W5 in the path, for a profiler or an instruction count: `legs` times S concurrent runs with (or
 * without) a shared resource manager, on a build (this tree's by default), after a warm-up of both sides.
 *
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof bench/resources/w5-leg.ts with|without [sessions=10000] [legs=5] [dist=dist]
 *   valgrind --tool=callgrind node --expose-gc bench/resources/w5-leg.ts with 10000 1 <base dist>
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inPathLeg, roundsFor, type W5Module, w5Runner } from '../w5.ts';

const [mode = 'with', sessionsArg = '10000', legsArg = '5', dist = 'dist'] = process.argv.slice(2);
const troupe = (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as W5Module;
const runner = w5Runner(troupe);
await inPathLeg(troupe, runner, 100, 5, true);
await inPathLeg(troupe, runner, 100, 5, false);
for (let i = 0; i < Number(legsArg); i++) {
  const sessions = Number(sessionsArg);
  const leg = await inPathLeg(troupe, runner, sessions, roundsFor(sessions, 40_000), mode === 'with');
  console.log(`${mode} ${sessionsArg}: wall ${leg.wallMs.toFixed(0)} ms, CPU ${leg.cpuMs.toFixed(0)} ms`);
}
