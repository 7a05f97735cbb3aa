/**
 * Machine instructions per W1 tool step by JavaScript function, in V8's baseline tiers: each function's own
 * instructions plus those of the inline-cache, literal and arithmetic builtins it calls (where a property load or
 * an object literal costs its work), from two callgrind profiles of `w1-loop.ts` (a short and a long loop after the
 * warm-up) whose difference is the steps between them. `--perf-basic-prof` names the JIT code (callgrind only
 * sees its addresses). A garbage collection is counted in the function whose allocation started it, so a function
 * that allocates can show the collector's work: compare builds, not single figures.
 *
 *   for n in 20 70; do
 *     valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=cl.$n \
 *       node --no-opt --no-maglev --predictable --perf-basic-prof --interpreted-frames-native-stack \
 *       bench/experiments/w1-loop.ts - dist $n
 *     mv /tmp/perf-<pid>.map perf.$n.map   # the map node wrote (one per process)
 *   done
 *   node bench/experiments/instructions-by-function.ts cl.20 perf.20.map cl.70 perf.70.map 500 [rows=60]
 *
 * (500 = (70 - 20) runs × 10 tool steps.)
 */
import { readFileSync } from 'node:fs';

type CodeRange = [start: number, size: number, name: string];

/** The JIT code ranges of a perf map (`<hex start> <hex size> <name>` per line), by start. */
function readPerfMap(file: string): CodeRange[] {
  const ranges: CodeRange[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const [start, size, ...name] = line.split(' ');
    ranges.push([Number.parseInt(start ?? '', 16), Number.parseInt(size ?? '', 16), name.join(' ')]);
  }
  return ranges.sort((a, b) => a[0] - b[0]);
}

function nameAt(ranges: readonly CodeRange[], address: number): string | undefined {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((ranges[middle] as CodeRange)[0] <= address) low = middle + 1;
    else high = middle - 1;
  }
  const range = ranges[high];
  return range && address < range[0] + range[1] ? range[2] : undefined;
}

const isJavaScript = (name: string) => /^(JS|Baseline|Function|Script|Eval):/.test(name);
/** Builtins whose work belongs to the caller: not those that run other JavaScript (calls, promises, prologues). */
const countsForCaller = (name: string) =>
  !/Call|Construct|Apply|Promise|Async|Resolve|Reject|Microtask|Iterator|Trampoline|Entry|Deopt|Compile|Prologue/.test(
    name,
  ) && /^(Builtins_|v8::internal::(Builtin_|Runtime_))/.test(name);

/** Per function: its own instructions plus those of the builtins it calls that count for it. */
function ownInstructions(profile: string, perfMap: string): Map<string, number> {
  const ranges = readPerfMap(perfMap);
  const names = new Map<string, string>();
  // callgrind compresses names: `(id) name` the first time, `(id)` after.
  const nameOf = (spec: string): string => {
    const match = spec.match(/^\((\d+)\)(?: (.*))?$/);
    if (!match) return spec;
    const [, id, given] = match as unknown as [string, string, string | undefined];
    if (given !== undefined) names.set(id, given);
    const name = names.get(id) ?? spec;
    const address = name.match(/^0x([0-9a-f]+)$/);
    return address
      ? (nameAt(ranges, Number.parseInt(address[1] ?? '', 16)) ?? 'JIT code')
      : name.replace(/'\d+$/, '');
  };
  const own = new Map<string, number>();
  const add = (name: string, cost: number) => own.set(name, (own.get(name) ?? 0) + cost);
  let fn = '';
  let callee = '';
  let afterCall = false;
  for (const line of readFileSync(profile, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) fn = nameOf(line.slice(3));
    else if (line.startsWith('cfn=')) callee = nameOf(line.slice(4));
    else if (line.startsWith('calls=')) afterCall = true;
    else if (/^[+\-*0-9]/.test(line)) {
      const cost = Number(line.trim().split(/\s+/)[1] ?? 0);
      if (afterCall) {
        afterCall = false;
        if (isJavaScript(fn) && countsForCaller(callee)) add(fn, cost);
      } else if (isJavaScript(fn)) add(fn, cost);
    }
  }
  return own;
}

const [shortProfile, shortMap, longProfile, longMap, stepsArg, rowsArg] = process.argv.slice(2);
if (!shortProfile || !shortMap || !longProfile || !longMap || !stepsArg)
  throw new Error(
    'usage: instructions-by-function.ts <short.out> <short.map> <long.out> <long.map> <steps> [rows]',
  );
const before = ownInstructions(shortProfile, shortMap);
const after = ownInstructions(longProfile, longMap);
const steps = Number(stepsArg);
// Node's own module loading (the TypeScript loader among it) is start-up work that differs between processes.
const rows = [...new Set([...before.keys(), ...after.keys()])]
  .filter((name) => !name.includes(' node:'))
  .map((name) => [name, ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / steps] as const);
const total = rows.reduce((sum, [, perStep]) => sum + perStep, 0);
console.log(`${Math.round(total)} instructions per step in JavaScript functions and the builtins they call`);
for (const [name, perStep] of rows.sort((a, b) => b[1] - a[1]).slice(0, Number(rowsArg ?? 60)))
  console.log(`${String(Math.round(perStep)).padStart(8)}  ${name}`);
