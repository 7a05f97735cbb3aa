import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import type { CommitBatch, SessionStore, StoredSession } from '../../src/persistence/store.ts';
import { SessionDurability } from '../../src/sessions/session-durability.ts';
import { SessionLog } from '../../src/sessions/session-log.ts';
import { idleRow } from '../persistence/fixtures.ts';

/**
 * A store that answers its first commit when the test says so and the others at once (as promises), recording the
 * batches in the order they reach it.
 */
function heldStore() {
  const batches: CommitBatch[] = [];
  let answerFirst: () => void = () => undefined;
  const store = {
    commit: (_sessionId: string, batch: CommitBatch) => {
      batches.push(batch);
      if (batches.length > 1) return Promise.resolve();
      return new Promise<void>((resolve) => {
        answerFirst = resolve;
      });
    },
  } as unknown as SessionStore;
  return { store, batches, answerFirst: () => answerFirst() };
}

function durabilityOn(store: SessionStore, row: StoredSession): SessionDurability {
  return new SessionDurability({
    store,
    sessionId: row.id,
    clock: systemClock,
    log: new SessionLog(-1, 100, () => []),
    row,
    runs: new Map(),
    journal: new Map(),
    approvals: [],
    session: () => {
      throw new Error('not asked in this test');
    },
    turnInput: 'hello',
    firstSeq: 0,
    onFlushError: () => undefined,
  });
}

describe('SessionDurability on a store that answers later', () => {
  it('builds each row on the last commit made, so a commit in flight is not undone by the next one', async () => {
    const { store, batches, answerFirst } = heldStore();
    const durability = durabilityOn(store, idleRow('s'));
    // A message queued while the turn runs: its commit is in flight when the status changes.
    const queued = durability.queuedChanged(['second message']);
    const status = durability.statusChanged('suspended');
    answerFirst();
    await Promise.all([queued, status]);
    expect(batches.map((batch) => [batch.session?.status, batch.session?.queued])).toEqual([
      ['idle', ['second message']],
      ['suspended', ['second message']],
    ]);
  });
});

describe('SessionDurability: commits in flight', () => {
  it('a commit waits for the one before it, failed or not; with none in flight it reaches the store at once', async () => {
    const batches: CommitBatch[] = [];
    let failFirst: (error: Error) => void = () => undefined;
    const store = {
      commit: (_sessionId: string, batch: CommitBatch) => {
        batches.push(batch);
        if (batches.length > 1) return Promise.resolve();
        return new Promise<void>((_resolve, reject) => {
          failFirst = reject;
        });
      },
    } as unknown as SessionStore;
    const durability = durabilityOn(store, idleRow('s'));
    const first = durability.queuedChanged(['a']);
    const second = durability.queuedChanged(['a', 'b']);
    expect(batches).toHaveLength(1);
    failFirst(new Error('disk full'));
    await expect(first).rejects.toThrow('disk full');
    await second;
    expect(batches.map((batch) => batch.session?.queued)).toEqual([['a'], ['a', 'b']]);
    // Nothing in flight any more: the next commit is passed to the store before `statusChanged` returns.
    const third = durability.statusChanged('suspended');
    expect(batches).toHaveLength(3);
    await third;
    const fourth = durability.statusChanged('closed');
    expect(batches).toHaveLength(4);
    await fourth;
  });
});
