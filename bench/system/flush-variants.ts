/**
 * A/B of when a session commits the events it emitted (a bench-only prototype: src is not changed). Today a session
 * schedules that commit in a microtask after its first pending event (SessionDurability.scheduleFlush). This script
 * copies dist/ to a temporary folder, changes only that scheduling in the copy, and runs a durable-session benchmark
 * against the original build and each variant in separate processes, alternating, `reps` times:
 *   - `immediate`: setImmediate instead of queueMicrotask (events ride along with the checkpoint or journal commit
 *     that follows in the same event-loop turn);
 *   - `timer:<ms>`: a timer of <ms> (a reader sees an event at most <ms> later; a burst of deltas is one commit);
 *   - `throttle:<ms>`: setImmediate, unless the session's last flush was less than <ms> ago: then a timer to <ms>
 *     after it (a lone event goes out at once; a stream of deltas is one commit per <ms>).
 * Each process prints its own table (its rounds interleaved as usual); compare the same row across builds.
 *
 *   npm run build && node bench/system/flush-variants.ts <script: durable-step|stream-deltas> [reps=3] [variants=immediate,throttle:5] -- [script args]
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const args = process.argv.slice(2);
const dash = args.indexOf('--');
const own = dash === -1 ? args : args.slice(0, dash);
const scriptArgs = dash === -1 ? [] : args.slice(dash + 1);
const script = own[0] ?? 'durable-step';
const reps = Number(own[1] ?? 3);
const variants = (own[2] ?? 'immediate,throttle:5').split(',');

const original = 'queueMicrotask(() => {';

/** The scheduling of the flush callback `body` (which uses `this`) for a variant, as JavaScript. */
function schedule(variant: string, body: string): string {
  const ms = Number(variant.split(':')[1]);
  if (variant === 'immediate') return `setImmediate(() => {${body}});`;
  if (variant.startsWith('timer:')) return `setTimeout(() => {${body}}, ${ms});`;
  if (variant.startsWith('throttle:'))
    return `const flush = () => { this.benchLastFlush = performance.now();${body}};
        const wait = (this.benchLastFlush ?? -Infinity) + ${ms} - performance.now();
        if (wait > 0) setTimeout(flush, wait);
        else setImmediate(flush);`;
  throw new Error(`flush-variants: unknown variant ${variant}`);
}

function build(variant: string): string {
  const folder = mkdtempSync(join(tmpdir(), `troupe-flush-${variant.replace(':', '-')}-`));
  cpSync(join(root, 'dist'), join(folder, 'dist'), { recursive: true });
  cpSync(join(root, 'bench', 'system'), join(folder, 'bench', 'system'), { recursive: true });
  cpSync(join(root, 'bench', 'persistence'), join(folder, 'bench', 'persistence'), { recursive: true });
  cpSync(join(root, 'package.json'), join(folder, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(folder, 'node_modules'));
  const file = join(folder, 'dist', 'system', 'session-durability.js');
  const text = readFileSync(file, 'utf8');
  const at = text.indexOf(original);
  // The callback ends with the first `});` at scheduleFlush's indentation.
  const close = '\n        });';
  const end = text.indexOf(close, at);
  if (at === -1 || text.indexOf(original, at + 1) !== -1 || end === -1)
    throw new Error(`flush-variants: scheduleFlush in ${file} is not what this script patches`);
  const body = text.slice(at + original.length, end);
  writeFileSync(file, text.slice(0, at) + schedule(variant, body) + text.slice(end + close.length));
  return folder;
}

const builds = [
  { name: 'microtask (as built)', folder: root },
  ...variants.map((variant) => ({ name: variant, folder: build(variant) })),
];
try {
  for (let rep = 0; rep < reps; rep++)
    for (let i = 0; i < builds.length; i++) {
      const { name, folder } = builds[(rep + i) % builds.length] as (typeof builds)[number];
      const run = spawnSync(
        process.execPath,
        [join(folder, 'bench', 'system', `${script}.ts`), ...scriptArgs],
        {
          encoding: 'utf8',
        },
      );
      console.log(`--- rep ${rep + 1}, flush: ${name}${run.status === 0 ? '' : ` (exit ${run.status})`}`);
      console.log((run.stdout + run.stderr).trim());
    }
} finally {
  for (const { folder } of builds) if (folder !== root) rmSync(folder, { recursive: true, force: true });
}
