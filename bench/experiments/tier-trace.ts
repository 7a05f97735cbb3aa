/**
 * When each function of the W1 tool step reaches V8's optimizing tiers: runs W1 in a fresh process with
 * `--trace-opt --trace-deopt --trace-opt-verbose`, writes a marker line before each run, and prints per function
 * the run number at which it was marked for and compiled with Maglev and Turbofan, its deoptimizations (run and
 * reason), how often an IC change delayed its tier-up, and its bytecode length (`--print-bytecode`, a second
 * process). Functions of the step that are still unoptimized at run 50 are listed with their calls' bytecode
 * budget in view: V8 tiers a function up after about 400 (Maglev) and 3,000 (Turbofan) invocations' worth of its
 * own bytecode length (a return consumes its offset from the function's start, a loop's back edge the loop's
 * length), and an IC change postpones that by 500 invocations' worth. Last, the compile jobs whose code was
 * installed during runs 51 to 150 (the window `worker.ts` times after 50 warm-up runs), with the time each took.
 *
 *   node [V8 flags] bench/experiments/tier-trace.ts [dist folder=dist] [runs=150]
 *
 * V8 flags given to this command reach the traced processes: with `--predictable` every compile runs on the main
 * thread when its function is marked, so the run numbers and the order repeat from one process to the next.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, ...rest] = process.argv.slice(2);
if (mode === '--child') {
  const { writeSync } = await import('node:fs');
  const dist = resolve(rest[0] ?? 'dist');
  const runs = Number(rest[1] ?? 150);
  const troupe = await import(pathToFileURL(join(dist, 'index.js')).href);
  const { prepareTroupeWith } = await import('../frameworks/troupe-adapter.ts');
  const { check } = await import('../scenario.ts');
  const scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
  const runner = prepareTroupeWith(troupe, 'troupe', scenario);
  for (let i = 1; i <= runs; i++) {
    // The marker goes straight to fd 1, as V8's traces do under `stdbuf -o0`: their order is the order of events.
    writeSync(1, `#run ${i}\n`);
    check(scenario, await runner.run(`task ${i}`), 'troupe');
  }
  writeSync(1, '#end\n');
} else {
  const dist = mode ?? 'dist';
  const runs = rest[0] ?? '150';
  const child = (flags: string[]) =>
    spawnSync(
      'stdbuf',
      ['-o0', process.execPath, ...process.execArgv, ...flags, import.meta.filename, '--child', dist, runs],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
      },
    );
  const traced = child(['--trace-opt', '--trace-deopt', '--trace-opt-verbose']);
  if (traced.status !== 0) throw new Error(traced.stderr);
  interface Tiering {
    maglevMarked?: number;
    maglev?: number;
    turbofanMarked?: number;
    turbofan?: number;
    osr: number[];
    deopts: string[];
    delayed: number;
    bytecode?: number;
  }
  const byName = new Map<string, Tiering>();
  const entry = (name: string): Tiering => {
    let found = byName.get(name);
    if (!found) {
      found = { osr: [], deopts: [], delayed: 0 };
      byName.set(name, found);
    }
    return found;
  };
  const windowJobs: string[] = [];
  let windowMs = 0;
  let run = 0;
  for (const line of traced.stdout.split('\n')) {
    const marker = /^#run (\d+)/.exec(line);
    if (marker) {
      run = Number(marker[1]);
      continue;
    }
    const named = /<JSFunction ([^ >]*) ?\(sfi/.exec(line);
    const fn = named ? named[1] || '(anonymous)' : undefined;
    if (line.startsWith('[delaying optimization of ')) {
      const name = /of ([^,]*),/.exec(line)?.[1] ?? '?';
      entry(name).delayed++;
    } else if (fn && line.startsWith('[marking')) {
      const t = entry(fn);
      if (line.includes('MAGLEV')) t.maglevMarked ??= run;
      else if (line.includes('TURBOFAN')) t.turbofanMarked ??= run;
    }
    const took = /took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(line);
    if (fn && took && line.startsWith('[completed compiling') && run > 50 && run <= 150) {
      const ms = Number(took[1]) + Number(took[2]) + Number(took[3]);
      windowMs += ms;
      windowJobs.push(
        `${run} ${line.includes('TURBOFAN') ? 'Turbofan' : 'Maglev'} ${fn} ${ms.toFixed(2)} ms`,
      );
    }
    if (fn && line.startsWith('[completed') && line.includes('OSR')) {
      entry(fn).osr.push(run);
    } else if (fn && line.startsWith('[completed')) {
      const t = entry(fn);
      if (line.includes('MAGLEV')) t.maglev ??= run;
      else if (line.includes('TURBOFAN')) t.turbofan ??= run;
    } else if (fn && line.startsWith('[bailout')) {
      const reason = /reason: (.*?)\): begin/.exec(line)?.[1] ?? '?';
      const kind = line.includes('<Code MAGLEV>') ? 'M' : 'T';
      entry(fn).deopts.push(`${run}${kind}:${reason}`);
    } else if (line.startsWith('[marking dependent code')) {
      // A lazy deoptimization: the code depended on something that changed (a map, a prototype, a weak object).
      const name = /<SharedFunctionInfo ([^>]*)>/.exec(line)?.[1] ?? '?';
      const reason = /reason: (.*)\]/.exec(line)?.[1] ?? '?';
      const kind = line.includes('<Code MAGLEV>') ? 'M' : 'T';
      entry(name).deopts.push(`${run}${kind}(lazy):${reason}`);
    }
  }
  // Bytecode lengths (and source files) of the same functions, from a second process.
  const printed = child(['--print-bytecode']);
  let current: string | undefined;
  for (const line of printed.stdout.split('\n')) {
    const head = /^\[generated bytecode for function: (\S*) \(.*<SharedFunctionInfo ?([^>]*)>\)\]/.exec(line);
    if (head) {
      current = head[1] || head[2] || '(anonymous)';
      continue;
    }
    const length = /^Bytecode length: (\d+)/.exec(line);
    if (length && current !== undefined) {
      const t = byName.get(current);
      if (t && t.bytecode === undefined) t.bytecode = Number(length[1]);
      current = undefined;
    }
  }
  const rows = [...byName].sort((a, b) => (a[1].maglev ?? 9999) - (b[1].maglev ?? 9999));
  console.log('function                                  bytes  M-mark M-done T-mark T-done delayed deopts');
  for (const [name, t] of rows) {
    const cell = (v: number | undefined) => String(v ?? '-').padStart(6);
    console.log(
      `${name.slice(0, 40).padEnd(40)} ${String(t.bytecode ?? '?').padStart(6)} ${cell(t.maglevMarked)} ${cell(t.maglev)} ${cell(t.turbofanMarked)} ${cell(t.turbofan)} ${String(t.delayed).padStart(7)} ${t.deopts.join(' | ')}${t.osr.length ? ` OSR@${t.osr.join(',')}` : ''}`,
    );
  }
  console.log(`\ncompile jobs installed in runs 51-150: ${windowJobs.length}, ${windowMs.toFixed(1)} ms`);
  for (const job of windowJobs) console.log(`  ${job}`);
}
