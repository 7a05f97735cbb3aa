import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateHistory } from '../../src/core/history.ts';
import type { RunResult } from '../../src/core/result.ts';
import { restateClient } from '../../src/restate/client.ts';
import { checkEffects, readEffects } from './support/effects-log.ts';
import {
  freePort,
  type RestateServer,
  restateUnavailable,
  startRestateServer,
} from './support/restate-server.ts';
import { type ServiceProcess, startService } from './support/service-process.ts';

const unavailable = restateUnavailable();
if (unavailable) console.warn(`Skipping the Restate tests: ${unavailable}.`);

/** A small seeded generator (mulberry32): the crash points are the same on every run of the test. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const seed = Number(process.env.CRASH_SEED ?? 20261124);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(unavailable !== undefined)('troupe/restate: crashes', () => {
  let server: RestateServer;
  let dir: string;
  let effectsLog: string;
  let port: number;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-crash-'));
    server = await startRestateServer();
    port = await freePort();
  }, 60_000);

  afterAll(async () => {
    await service?.kill();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A turn through the ingress with an idempotency key: a request cut by a killed server is sent again and attaches
   * to the same invocation.
   */
  async function turn(session: string, number: number): Promise<RunResult<unknown>> {
    const client = restateClient({ ingress: server.ingress }).session('triage', session);
    for (;;) {
      try {
        return await client.send(`[${session}/t${number}] help me`, {
          idempotencyKey: `${session}-t${number}`,
        });
      } catch (error) {
        if (error instanceof Error && 'status' in error) throw error;
        await sleep(100); // the server is down: try again
      }
    }
  }

  /** Sessions side by side, their turns one after another; resolves with every result. */
  async function workload(
    sessions: readonly string[],
    turns: number,
  ): Promise<Map<string, RunResult<unknown>[]>> {
    const results = new Map<string, RunResult<unknown>[]>();
    await Promise.all(
      sessions.map(async (session) => {
        const done: RunResult<unknown>[] = [];
        results.set(session, done);
        for (let number = 1; number <= turns; number++) done.push(await turn(session, number));
      }),
    );
    return results;
  }

  async function expectIntact(results: Map<string, RunResult<unknown>[]>, turns: number): Promise<void> {
    for (const [session, done] of results) {
      // No turn was lost: every one completed, with the answer its input asked for.
      expect(done.map((result) => [result.status, result.text])).toEqual(
        done.map((_, i) => [
          'completed',
          `support ${session}/t${i + 1}: research ${session}/t${i + 1}/r: facts about topic of ${session}/t${i + 1}/r`,
        ]),
      );
      const status = await restateClient({ ingress: server.ingress }).session('triage', session).status();
      expect(status).toMatchObject({ turns, agent: 'support', pendingApprovals: 0 });
      const history = await restateClient({ ingress: server.ingress }).session('triage', session).history();
      validateHistory(history);
      expect(history.filter((message) => message.role === 'user')).toHaveLength(turns);
      expect(history).toEqual(done.at(-1)?.history);
    }
  }

  it('SIGKILLs the service at 50+ seeded points: no finished call runs again, no turn is lost', async () => {
    effectsLog = join(dir, 'service-kills.log');
    const random = seeded(seed);
    const target = 50;
    let kills = 0;
    let stopping = false;
    const crashAt = () => (kills < target ? String(1 + Math.floor(random() * 6)) : '0');
    service = await startService({ PORT: String(port), EFFECTS_LOG: effectsLog, CRASH_AT: crashAt() });
    await server.register(`http://127.0.0.1:${port}`);
    // Brings the service back whenever it kills itself, with the next crash point.
    const supervisor = (async () => {
      while (!stopping && service) {
        const signal = await service.exited;
        if (stopping) return;
        if (signal === 'SIGKILL') kills += 1;
        service = await startService({ PORT: String(port), EFFECTS_LOG: effectsLog, CRASH_AT: crashAt() });
      }
    })();
    let round = 0;
    while (kills < target && round < 4) {
      round += 1;
      const sessions = [1, 2, 3].map((n) => `k${round}-${n}`);
      await expectIntact(await workload(sessions, 3), 3);
    }
    stopping = true;
    await service?.kill();
    await supervisor;
    service = undefined;

    const lines = readEffects(effectsLog);
    const report = checkEffects(lines);
    console.log(
      `restate crash matrix (CRASH_SEED=${seed}): ${report.kills} service kills, ${new Set(lines.filter((line) => line.phase === 'start').map((line) => line.key)).size} effects, ${report.rerunAfterCompletion.length} re-runs of completed effects, ${report.interruptedAndRerun} in-flight re-runs (same key: ${report.idempotencyKeyChanged.length === 0})`,
    );
    expect(report.kills).toBeGreaterThanOrEqual(target);
    expect(report.rerunAfterCompletion).toEqual([]);
    expect(report.twiceInOneEpoch).toEqual([]);
    expect(report.interruptedNotRerun).toEqual([]);
    expect(report.idempotencyKeyChanged).toEqual([]);
    expect(report.interruptedAndRerun).toBeGreaterThan(0);
  }, 400_000);

  it('SIGKILLs the Restate server mid-run and restarts it on the same data: the same guarantees', async () => {
    effectsLog = join(dir, 'server-kills.log');
    service = await startService({ PORT: String(port), EFFECTS_LOG: effectsLog });
    await server.register(`http://127.0.0.1:${port}`);
    const random = seeded(seed + 1);
    const running = workload(['v1', 'v2', 'v3'], 3);
    let finished = false;
    void running.then(() => {
      finished = true;
    });
    let serverKills = 0;
    while (!finished && serverKills < 3) {
      // Kill it mid-run: once the service has logged a few more calls (a seeded number of them).
      const seen = readEffects(effectsLog, { whileWriting: true }).length;
      const wanted = seen + 4 + Math.floor(random() * 12);
      while (!finished && readEffects(effectsLog, { whileWriting: true }).length < wanted) await sleep(5);
      if (finished) break;
      const pid = server.pid as number;
      await server.kill();
      // The marker goes in once the server is gone: a call the service started before that belongs to the epoch
      // before the kill, even if it ends after it.
      appendFileSync(
        effectsLog,
        `${JSON.stringify({ pid, kind: 'marker', key: '', tag: '', phase: 'server-kill' })}\n`,
      );
      serverKills += 1;
      await server.start();
    }
    await expectIntact(await running, 3);
    expect(serverKills).toBe(3);
    const lines = readEffects(effectsLog);
    const report = checkEffects(lines);
    console.log(
      `restate server kills: ${serverKills} server SIGKILLs mid-run, ${new Set(lines.filter((line) => line.phase === 'start').map((line) => line.key)).size} effects, ${report.rerunAfterCompletion.length} re-runs of completed effects, ${report.interruptedAndRerun} in-flight re-runs`,
    );
    expect(report.rerunAfterCompletion).toEqual([]);
    expect(report.twiceInOneEpoch).toEqual([]);
    expect(report.idempotencyKeyChanged).toEqual([]);
  }, 90_000);
});
