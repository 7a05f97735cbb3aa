import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import {
  ForeignStoreError,
  StoreCorruptError,
  StoreLayoutError,
} from '../../src/persistence/store-errors.ts';

/**
 * Random damage to a store file holding interrupted sessions (a pending approval, a nested run blocked in a tool with
 * a message queued behind it, an idle session): every damaged file must either be refused with a typed store error
 * or read back exactly as before. Reading back different data is what must never happen: the runtime would resume
 * from it.
 */
const directory = mkdtempSync(join(tmpdir(), 'troupe-damage-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** The corpus's newest store, opened once by this code (migrated to its layout), as one file. */
function interruptedStore(): string {
  const path = join(directory, 'interrupted.db');
  copyFileSync(new URL('./fixtures/layouts/layout-4.db', import.meta.url), path);
  createSqliteStore(path).close();
  return path;
}

/** Everything the store gives back for its sessions: what the runtime would resume from. */
function readAll(path: string): unknown {
  const store = createSqliteStore(path);
  try {
    const list = store.list();
    const sessions = ['approval', 'idle', 'nested'].map((id) => ({
      state: store.load(id),
      events: store.readEvents(id, -1),
      approvals: store.approvals({ sessionId: id }),
    }));
    return { list, sessions, approvals: store.approvals() };
  } finally {
    store.close();
  }
}

/** A small seeded generator (mulberry32): the same seed damages the same bytes. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const typed = (error: unknown): boolean =>
  error instanceof StoreCorruptError ||
  error instanceof StoreLayoutError ||
  error instanceof ForeignStoreError;

describe('damage to a stored session is a typed error, never different data', () => {
  it('random byte damage over 400 seeds (DAMAGE_SEEDS for more): refused with a typed error, or read back exactly the same', () => {
    const original = interruptedStore();
    const bytes = readFileSync(original);
    const expected = readAll(original);
    const seeds = Number(process.env.DAMAGE_SEEDS ?? 400);
    const outcomes = { same: 0, refused: 0, different: [] as number[], untyped: [] as string[] };
    for (let seed = 1; seed <= seeds; seed += 1) {
      const next = random(seed);
      const damaged = Buffer.from(bytes);
      // Mostly one byte; every third seed a burst of up to 8.
      const length = seed % 3 === 0 ? 1 + Math.floor(next() * 8) : 1;
      const at = Math.floor(next() * (damaged.length - length));
      for (let offset = at; offset < at + length; offset += 1) {
        const before = damaged[offset] as number;
        damaged[offset] = (before + 1 + Math.floor(next() * 255)) % 256;
      }
      const path = join(directory, `damaged-${seed}.db`);
      writeFileSync(path, damaged);
      try {
        if (isDeepStrictEqual(readAll(path), expected)) outcomes.same += 1;
        else outcomes.different.push(seed);
      } catch (error) {
        if (typed(error)) outcomes.refused += 1;
        else outcomes.untyped.push(`seed ${seed}: ${String(error)}`);
      } finally {
        rmSync(path, { force: true });
        rmSync(`${path}-wal`, { force: true });
        rmSync(`${path}-shm`, { force: true });
      }
    }
    expect(outcomes.different).toEqual([]);
    expect(outcomes.untyped).toEqual([]);
    // The damage reached the records: many files were refused.
    expect(outcomes.refused).toBeGreaterThan(50);
  });
});
