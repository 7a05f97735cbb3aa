/**
 * Fuzzes the public API (`troupe`, `troupe/testing`): random model behaviours, agents, inputs, histories and
 * options through run(), stream() and sessions of several turns (see scenario.ts), each checked by execute.ts.
 * Prints the counts: cases, results checked, invariant breaks by kind, crashes (unhandled rejections and uncaught
 * exceptions, counted by process-level listeners), hangs, typed rejections; and the first breaks with the case
 * that produced them (replay one with --replay '<json>').
 *
 *   npx tsx bench/fuzz/fuzz.ts --runs 100000 --seed 1 [--concurrency 32] [--watchdog 10000] [--profile test]
 *     [--avoid-known-bugs]   (onApproval decisions always of the request's kind: see execute.ts)
 *
 * (tsx resolves `troupe` to src/ through tsconfig.json's paths; no build needed.)
 */
import fc from 'fast-check';
import { activeRuntimeCount } from 'troupe/testing';
import { execute, type Outcome, type ProblemKind } from './execute.ts';
import { cliProfile, type Scenario, scenarios, testProfile } from './scenario.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback;
};
const runs = Number(option('runs', '1000'));
const seed = Number(option('seed', '1'));
const concurrency = Number(option('concurrency', '32'));
const watchdogMs = Number(option('watchdog', '10000'));
const profile = option('profile', 'cli') === 'test' ? testProfile : cliProfile;
const replay = option('replay', '');
const avoidKnownBugs = args.includes('--avoid-known-bugs');
const batch = 1_000;

const crashes: string[] = [];
process.on('unhandledRejection', (reason) => {
  crashes.push(
    `unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
  );
});
process.on('uncaughtException', (error) => {
  crashes.push(`uncaught exception: ${error.stack ?? error.message}`);
});

const totals = {
  cases: 0,
  results: 0,
  typedRejections: 0,
  unexpectedRejections: 0,
  casesWithBreaks: 0,
};
const byKind = new Map<ProblemKind, number>();
const samples = new Map<ProblemKind, { detail: string; scenario: Scenario }[]>();
const unexpected: string[] = [];
const rejectionKinds = new Map<string, number>();
/** Breaks grouped by what they say (case numbers and counts left out). */
const breakKinds = new Map<string, number>();

function record(scenario: Scenario, outcome: Outcome): void {
  totals.cases += 1;
  totals.results += outcome.results;
  totals.typedRejections += outcome.typedRejections;
  totals.unexpectedRejections += outcome.unexpectedRejections.length;
  if (unexpected.length < 5) unexpected.push(...outcome.unexpectedRejections.slice(0, 5 - unexpected.length));
  if (outcome.problems.length > 0) totals.casesWithBreaks += 1;
  for (const message of outcome.rejections) {
    const kind = message
      .replace(/"[^"]*"/g, '"…"')
      .replace(/\d+/g, 'N')
      .slice(0, 90);
    rejectionKinds.set(kind, (rejectionKinds.get(kind) ?? 0) + 1);
  }
  for (const problem of outcome.problems) {
    byKind.set(problem.kind, (byKind.get(problem.kind) ?? 0) + 1);
    const said = problem.detail
      .replace(/^case \d+[^:]*: /, '')
      .replace(/\d+/g, 'N')
      .slice(0, 100);
    breakKinds.set(`${problem.kind}: ${said}`, (breakKinds.get(`${problem.kind}: ${said}`) ?? 0) + 1);
    const list = samples.get(problem.kind) ?? [];
    if (list.length < 3) list.push({ detail: problem.detail, scenario });
    samples.set(problem.kind, list);
  }
}

const started = performance.now();
if (replay !== '') {
  const scenario = JSON.parse(replay) as Scenario;
  record(scenario, await execute(scenario, { watchdogMs, avoidKnownBugs }));
} else {
  const arbitrary = scenarios(profile);
  for (let done = 0; done < runs; done += batch) {
    const cases = fc.sample(arbitrary, {
      seed: seed * 1_000_003 + done,
      numRuns: Math.min(batch, runs - done),
    });
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const scenario = cases[next++] as Scenario;
        record(scenario, await execute(scenario, { watchdogMs, avoidKnownBugs }));
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    if ((done + batch) % 10_000 === 0 || done + batch >= runs)
      console.error(
        `… ${totals.cases} cases, ${totals.casesWithBreaks} with breaks, ${crashes.length} crashes (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
  }
}
// Let late timers and rejections surface before counting.
await new Promise((resolve) => setTimeout(resolve, 200));

const hangs = byKind.get('hang') ?? 0;
const breaks = [...byKind.entries()].filter(([kind]) => kind !== 'hang').reduce((sum, [, n]) => sum + n, 0);
const leaked = activeRuntimeCount();
console.log(
  `fuzz: seed ${seed}, profile ${profile === cliProfile ? 'cli' : 'test'}, concurrency ${concurrency}${avoidKnownBugs ? ', avoiding known bugs' : ''}`,
);
console.log(`  cases (runs)             ${totals.cases}`);
console.log(`  results checked          ${totals.results}  (one per run, stream or session turn)`);
console.log(
  `  invariant breaks         ${breaks}  (hangs apart; ${totals.casesWithBreaks} cases with a break or a hang)`,
);
for (const [kind, n] of [...byKind.entries()].sort()) console.log(`    ${kind.padEnd(24)} ${n}`);
for (const [said, n] of [...breakKinds.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12))
  console.log(`      ${String(n).padStart(6)}  ${said}`);
console.log(`  crashes                  ${crashes.length}  (unhandled rejections + uncaught exceptions)`);
console.log(`  hangs                    ${hangs}  (watchdog ${watchdogMs} ms)`);
console.log(
  `  typed rejections         ${totals.typedRejections}  (${totals.unexpectedRejections} of input not made bad on purpose)`,
);
for (const [kind, n] of [...rejectionKinds.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12))
  console.log(`    ${String(n).padStart(7)}  ${kind}`);
console.log(`  runtimes left registered ${leaked}`);
console.log(`  time                     ${((performance.now() - started) / 1000).toFixed(1)} s`);
for (const [kind, list] of samples) {
  for (const { detail, scenario } of list) {
    console.log(`\n[${kind}] ${detail}`);
    console.log(`  replay: --replay '${JSON.stringify(scenario)}'`);
  }
}
for (const crash of crashes.slice(0, 5)) console.log(`\n[crash] ${crash.slice(0, 2_000)}`);
for (const line of unexpected) console.log(`\n[unexpected typed rejection] ${line}`);
process.exit(breaks + crashes.length + hangs > 0 ? 1 : 0);
