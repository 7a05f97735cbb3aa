import { existsSync, readFileSync } from 'node:fs';
import type { EffectLine } from './desk-agents.ts';

/**
 * The lines of an effects log (see desk-agents.ts), in the order they were appended. Another process may be
 * appending while this reads: a write that crosses a page boundary can be visible in part, so a line counts only
 * once its newline is in the file. `whileWriting` ignores such an unterminated tail; otherwise (every writer has
 * stopped) an unterminated tail is a torn write and an error.
 */
export function readEffects(path: string, options: { whileWriting?: boolean } = {}): EffectLine[] {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  const end = text.lastIndexOf('\n') + 1;
  if (end < text.length && !options.whileWriting)
    throw new Error(`${path} ends in an unterminated line: ${JSON.stringify(text.slice(end))}`);
  return text
    .slice(0, end)
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as EffectLine);
}

/** How often each effect started. */
export function startCounts(lines: readonly EffectLine[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) if (line.phase === 'start') counts.set(line.key, (counts.get(line.key) ?? 0) + 1);
  return counts;
}

export interface EffectsReport {
  /** Effects that started again after they had completed (their result was journaled): must be empty. */
  rerunAfterCompletion: string[];
  /** Effects that started twice within one epoch (between two kills): must be empty. */
  twiceInOneEpoch: string[];
  /** Effects a kill interrupted (the crash point was inside them) that never ran again: must be empty. */
  interruptedNotRerun: string[];
  /** Effects a kill interrupted that ran again, with the same idempotency key (tools) each time. */
  interruptedAndRerun: number;
  /** Tool calls whose runs carried different idempotency keys: must be empty. */
  idempotencyKeyChanged: string[];
  /** Kills (service crash points and server kills). */
  kills: number;
  effects: number;
}

/**
 * Checks an effects log written across crashes. Epochs are the stretches between two kills (a crash marker the
 * service wrote right before it SIGKILLed itself, or a `server-kill` marker the test wrote). An effect is
 * completed when, after its `end`, the same process started (or was about to start: a `before-start` crash
 * marker) an effect that can only start once that result is journaled, in the same epoch: for a model call any
 * later call of the same run (tag), for a tool call a later model call of the same run (the calls of one batch run
 * in parallel and prove nothing about each other).
 */
export function checkEffects(lines: readonly EffectLine[]): EffectsReport {
  let epoch = 0;
  const tagged = lines.map((line) => {
    const at = { ...line, epoch };
    if (line.phase === 'crash' || line.phase === 'server-kill') epoch += 1;
    return at;
  });
  const rerunAfterCompletion = new Set<string>();
  const twiceInOneEpoch = new Set<string>();
  const interruptedNotRerun: string[] = [];
  let interruptedAndRerun = 0;
  const idempotencyKeyChanged: string[] = [];
  const keys = new Set(tagged.filter((line) => line.phase === 'start').map((line) => line.key));
  const begins = (line: (typeof tagged)[number]) =>
    line.phase === 'start' || (line.phase === 'crash' && line.point === 'before-start');

  for (const key of keys) {
    const starts = tagged
      .map((line, index) => ({ line, index }))
      .filter((x) => x.line.key === key && x.line.phase === 'start');
    const epochs = starts.map((x) => x.line.epoch);
    if (new Set(epochs).size !== epochs.length) twiceInOneEpoch.add(key);
    const idems = new Set(starts.map((x) => x.line.idem));
    if (idems.size > 1) idempotencyKeyChanged.push(key);
    const kind = starts[0]?.line.kind;
    const tag = starts[0]?.line.tag;
    // Where this effect was completed (journaled for sure), if anywhere.
    let completedAt: number | undefined;
    tagged.forEach((end, index) => {
      if (completedAt !== undefined || end.key !== key || end.phase !== 'end') return;
      const witness = tagged.findIndex(
        (later, at) =>
          at > index &&
          begins(later) &&
          later.pid === end.pid &&
          later.epoch === end.epoch &&
          later.tag === tag &&
          later.key !== key &&
          (kind === 'model' || later.kind === 'model'),
      );
      if (witness >= 0) completedAt = witness;
    });
    if (completedAt !== undefined && starts.some((x) => x.index > (completedAt as number)))
      rerunAfterCompletion.add(key);
  }

  // A crash inside an effect (after it started, or right before it returned) leaves it unjournaled: it must run
  // again, once, in a later epoch.
  tagged.forEach((line) => {
    if (line.phase !== 'crash' || line.point === 'before-start') return;
    const again = tagged.some(
      (later) => later.key === line.key && later.phase === 'start' && later.epoch > line.epoch,
    );
    if (again) interruptedAndRerun += 1;
    else interruptedNotRerun.push(`${line.key} (${line.point})`);
  });

  return {
    rerunAfterCompletion: [...rerunAfterCompletion],
    twiceInOneEpoch: [...twiceInOneEpoch],
    interruptedNotRerun,
    interruptedAndRerun,
    idempotencyKeyChanged,
    kills: tagged.filter((line) => line.phase === 'crash' || line.phase === 'server-kill').length,
    effects: keys.size,
  };
}
