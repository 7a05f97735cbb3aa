import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { crashSession, eventsInBatch, filler, groupSessions } from './crash-writer.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const writer = fileURLToPath(new URL('./crash-writer.ts', import.meta.url));
/** Change it to replay another sequence of kill points; failures print the seed. */
const seed = Number(process.env.TROUPE_CRASH_SEED ?? 20_261_124);

/** A small seeded generator (mulberry32), so every run kills at the same points. */
function seeded(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Killed {
  /** By session, the last batch the child said was committed (its commit had returned, or resolved). */
  acknowledged: Map<string, number>;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the writer until it dies: killed `killAfterMs` after it is ready, or by itself after `selfKillAfter` commits. */
function runWriter(
  file: string,
  synchronous: 'full' | 'normal',
  mode: 'single' | 'group' | 'group-thread',
  plan: { killAfterMs: number } | { selfKillAfter: number },
): Promise<Killed> {
  return new Promise((resolve, reject) => {
    const selfKillAfter = 'selfKillAfter' in plan ? plan.selfKillAfter : 0;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', writer, file, synchronous, String(selfKillAfter), mode],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const acknowledged = new Map<string, number>();
    let stdout = '';
    let stderr = '';
    // Never wait forever, whatever the child does.
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const lines = stdout.split('\n');
      stdout = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready' && 'killAfterMs' in plan)
          setTimeout(() => child.kill('SIGKILL'), plan.killAfterMs);
        const match = /^committed (\S+) (\d+)$/.exec(line);
        if (match) acknowledged.set(String(match[1]), Number(match[2]));
      }
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      clearTimeout(guard);
      resolve({ acknowledged, signal, stderr });
    });
  });
}

function totalEvents(batches: number): number {
  let total = 0;
  for (let batch = 1; batch <= batches; batch++) total += eventsInBatch(batch);
  return total;
}

const modes = [
  { mode: 'single' as const, name: 'one commit per transaction', sessions: [crashSession] },
  { mode: 'group' as const, name: 'group commit, four sessions at once', sessions: groupSessions },
  {
    mode: 'group-thread' as const,
    name: "group commit on the store's writer thread, four sessions at once",
    sessions: groupSessions,
  },
];

describe.each(modes)('a SQLite store killed mid-commit ($name)', ({ mode, sessions }) => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'troupe-crash-'));
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it('shows every committed batch whole and no partial one after reopening, round after round', async () => {
    const file = join(directory, 'sessions.db');
    const random = seeded(seed);
    const lastBatches = new Map<string, number>();
    for (let round = 0; round < 6; round++) {
      const where = `round ${round} (TROUPE_CRASH_SEED=${seed})`;
      const synchronous = round % 2 === 0 ? 'full' : 'normal';
      const plan =
        round % 3 === 2
          ? { selfKillAfter: 1 + Math.floor(random() * 40) }
          : { killAfterMs: 20 + Math.floor(random() * 180) };
      const killed = await runWriter(file, synchronous, mode, plan);
      expect(killed.signal, `${where}: ${killed.stderr}`).toBe('SIGKILL');
      // Only SQLite's own files: the database, its write-ahead log and the shared-memory index.
      for (const name of readdirSync(directory))
        expect(['sessions.db', 'sessions.db-wal', 'sessions.db-shm'], where).toContain(name);

      const store = createSqliteStore(file);
      try {
        for (const sessionId of sessions) {
          const state = store.load(sessionId);
          const batches = state?.session.turns ?? 0;
          // A commit that returned is kept; the log never goes backwards.
          expect(batches, `${where}, ${sessionId}`).toBeGreaterThanOrEqual(
            killed.acknowledged.get(sessionId) ?? 0,
          );
          expect(batches, `${where}, ${sessionId}`).toBeGreaterThanOrEqual(lastBatches.get(sessionId) ?? 0);
          lastBatches.set(sessionId, batches);
          if (state === undefined) continue;
          // Each part of the last batch is there, and nothing of a later one.
          expect(state.session.updatedAt, `${where}, ${sessionId}`).toBe(batches);
          expect(state.journal.get('batch'), `${where}, ${sessionId}`).toBe(batches);
          expect(state.journal.size, `${where}, ${sessionId}`).toBe(batches + 1);
          expect(state.journal.get(`filler:${batches}`), `${where}, ${sessionId}`).toBe(filler(batches));
          expect(state.runs.get('nested')?.step, `${where}, ${sessionId}`).toBe(batches);
          expect(
            state.approvals.map((record) => record.callId),
            `${where}, ${sessionId}`,
          ).toEqual(Array.from({ length: batches }, (_, index) => `call_${index + 1}`));
          expect(state.lastSeq + 1, `${where}, ${sessionId}`).toBe(totalEvents(batches));
          const logged = store.readEvents(sessionId, -1);
          const expected: string[] = [];
          for (let batch = 1; batch <= batches; batch++)
            for (let index = 0; index < eventsInBatch(batch); index++) expected.push(`${batch}/${index}`);
          expect(
            logged.map((event) => (event.data as { content: string }).content),
            `${where}, ${sessionId}`,
          ).toEqual(expected);
          expect(
            logged.map((event) => event.seq),
            `${where}, ${sessionId}`,
          ).toEqual(expected.map((_, index) => index));
        }
      } finally {
        store.close();
      }
    }
    // The rounds did commit something: the test is not passing on an empty store.
    for (const sessionId of sessions) expect(lastBatches.get(sessionId), sessionId).toBeGreaterThan(0);
  });
});
