import { describe, expect, it } from 'vitest';
import type { CommitBatch } from '../../src/persistence/store.ts';
import { toStoredCheckpoint } from '../../src/persistence/stored-format/stored-checkpoint.ts';
import { mergedCommit } from '../../src/sessions/merged-commit.ts';
import { approval, checkpoint, sessionRow } from '../persistence/fixtures.ts';

const run = (step: number) => toStoredCheckpoint(checkpoint({ step }));
const row = (turns: number) => sessionRow('s', { turns });

describe('mergedCommit', () => {
  it('keeps the later session row, and each key at its last value in its first place', () => {
    const first: CommitBatch = {
      session: row(1),
      journal: [
        ['a', 1],
        ['b', 1],
      ],
      runs: [['r1', run(1)]],
      approvals: [approval('s', 'c1')],
    };
    const second: CommitBatch = {
      session: row(2),
      journal: [
        ['a', 2],
        ['c', 2],
      ],
      runs: [['r1', null]],
      approvals: [approval('s', 'c1', { status: 'approved' }), approval('s', 'c2')],
    };
    const merged = mergedCommit(first, second);
    expect(merged.session).toBe(second.session);
    expect(merged.journal).toEqual([
      ['a', 2],
      ['b', 1],
      ['c', 2],
    ]);
    expect(merged.runs).toEqual([['r1', null]]);
    expect(merged.approvals?.map((record) => [record.callId, record.status])).toEqual([
      ['c1', 'approved'],
      ['c2', 'pending'],
    ]);
    expect(mergedCommit({ session: row(1) }, { journal: [['k', 1]] }).session).toEqual(row(1));
  });

  it("drops what the first wrote of the turn when the second clears it, and keeps a first's clear", () => {
    const cleared = mergedCommit({ journal: [['a', 1]], runs: [['r', run(1)]] }, { clearTurn: true });
    expect(cleared).toEqual({ clearTurn: true });
    const kept = mergedCommit({ clearTurn: true }, { journal: [['a', 1]] });
    expect(kept).toEqual({ clearTurn: true, journal: [['a', 1]] });
  });

  it('is relaxed only when both are', () => {
    expect(mergedCommit({ relaxed: true }, { relaxed: true }).relaxed).toBe(true);
    expect(mergedCommit({ relaxed: true }, { session: row(1) }).relaxed).toBeUndefined();
    expect(mergedCommit({ session: row(1) }, { relaxed: true }).relaxed).toBeUndefined();
  });
});
