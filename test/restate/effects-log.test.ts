import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EffectLine } from './support/desk-agents.ts';
import { checkEffects, readEffects } from './support/effects-log.ts';

/** The crash tests rest on this checker: it must see what it is there to see. */

const line = (pid: number, kind: EffectLine['kind'], key: string, phase: EffectLine['phase'], extra = {}) =>
  ({ pid, kind, key, tag: 't', phase, ...extra }) as EffectLine;

describe('checkEffects', () => {
  it('passes a log where only the interrupted call ran again, once', () => {
    const report = checkEffects([
      line(1, 'model', 'm1', 'start'),
      line(1, 'model', 'm1', 'end'),
      line(1, 'tool', 'a', 'start', { idem: 'k-a' }),
      line(1, 'tool', 'a', 'crash', { point: 'after-start' }),
      line(2, 'tool', 'a', 'start', { idem: 'k-a' }),
      line(2, 'tool', 'a', 'end'),
      line(2, 'model', 'm2', 'start'),
    ]);
    expect(report).toMatchObject({
      rerunAfterCompletion: [],
      twiceInOneEpoch: [],
      interruptedNotRerun: [],
      idempotencyKeyChanged: [],
      interruptedAndRerun: 1,
      kills: 1,
      effects: 3,
    });
  });

  it('flags a call that ran again after a later call proved its result was journaled', () => {
    const report = checkEffects([
      line(1, 'model', 'm1', 'start'),
      line(1, 'model', 'm1', 'end'),
      line(1, 'tool', 'a', 'crash', { point: 'before-start' }),
      line(2, 'model', 'm1', 'start'),
    ]);
    expect(report.rerunAfterCompletion).toEqual(['m1']);
  });

  it('does not take a parallel tool call for proof that another one was journaled', () => {
    const report = checkEffects([
      line(1, 'tool', 'a', 'start'),
      line(1, 'tool', 'a', 'end'),
      line(1, 'tool', 'b', 'start'),
      line(1, 'tool', 'b', 'crash', { point: 'after-start' }),
      line(2, 'tool', 'a', 'start'),
      line(2, 'tool', 'b', 'start'),
    ]);
    expect(report.rerunAfterCompletion).toEqual([]);
  });

  it('flags two runs between two kills, an interrupted call never run again, and a changed idempotency key', () => {
    const report = checkEffects([
      line(1, 'tool', 'a', 'start', { idem: 'k1' }),
      line(1, 'tool', 'a', 'start', { idem: 'k2' }),
      line(1, 'tool', 'b', 'start'),
      line(1, 'tool', 'b', 'crash', { point: 'before-return' }),
    ]);
    expect(report.twiceInOneEpoch).toEqual(['a']);
    expect(report.idempotencyKeyChanged).toEqual(['a']);
    expect(report.interruptedNotRerun).toEqual(['b (before-return)']);
  });
});

describe('readEffects', () => {
  it('counts a line once its newline is written: a tail another process is still writing is left out, or an error once writing has stopped', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-effects-'));
    try {
      const path = join(dir, 'effects.log');
      const whole = `${JSON.stringify(line(1, 'model', 'm1', 'start'))}\n`;
      writeFileSync(path, `${whole}{`);
      expect(readEffects(path, { whileWriting: true })).toEqual([line(1, 'model', 'm1', 'start')]);
      expect(() => readEffects(path)).toThrow(/unterminated line: "\{"/);
      writeFileSync(path, whole);
      expect(readEffects(path)).toEqual([line(1, 'model', 'm1', 'start')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
