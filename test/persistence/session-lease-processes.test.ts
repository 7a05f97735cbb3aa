/**
 * Two live processes on one SQLite file (a rolling deploy): the process running a session holds its lease, so
 * another process's recover() is refused with SessionLeasedError until the holder dies (then it recovers at once,
 * no waiting), and a process that was taken over has its next commit fenced: its run ends with SessionFencedError.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeasePlan, RecoverReport, ResultReport } from './lease/lease-child.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const childScript = fileURLToPath(new URL('./lease/lease-child.ts', import.meta.url));

/** A child process, with a way to wait for the next line it prints that starts with a word. */
class Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';
  readonly #lines: string[] = [];
  #waiting: (() => void) | undefined;

  constructor(plan: LeasePlan) {
    this.process = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', childScript], {
      cwd: root,
      env: { ...process.env, TROUPE_LEASE_PLAN: JSON.stringify(plan) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Never wait forever, whatever the child does.
    const guard = setTimeout(() => this.process.kill('SIGKILL'), 60_000);
    let buffered = '';
    this.process.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      this.#lines.push(...lines);
      this.#waiting?.();
    });
    this.process.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) =>
      this.process.on('close', (code, signal) => {
        clearTimeout(guard);
        this.#waiting?.();
        resolve({ code, signal });
      }),
    );
  }

  /** The rest of the first line not taken yet that starts with `word` (other lines stay for their own wait). */
  async next(word: string): Promise<string> {
    for (;;) {
      const index = this.#lines.findIndex((line) => line.startsWith(`${word} `) || line === word);
      if (index >= 0) {
        const [line] = this.#lines.splice(index, 1);
        return (line as string).slice(word.length + 1);
      }
      if (this.process.exitCode !== null || this.process.signalCode !== null)
        throw new Error(
          `the child ended without printing "${word}": ${this.#lines.join('\n')}\n${this.stderr}`,
        );
      await new Promise<void>((resolve) => (this.#waiting = resolve));
    }
  }

  release(): void {
    this.process.stdin.write('release\n');
  }
}

let directory: string;
const children: Child[] = [];
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-lease-'));
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.process.kill('SIGKILL');
    await child.exited;
  }
  rmSync(directory, { recursive: true, force: true });
});

const start = (plan: Omit<LeasePlan, 'store'>): Child => {
  const child = new Child({ ...plan, store: join(directory, 'sessions.db') });
  children.push(child);
  return child;
};

describe('a session lease across two live processes', () => {
  it("refuses a second process's recover() while the holder lives, and recovers at once after it is SIGKILLed", async () => {
    const a = start({ mode: 'run' });
    expect(Number(await a.next('tool-started'))).toBe(a.process.pid);

    const b = start({ mode: 'recover' });
    const refused = JSON.parse(await b.next('recover')) as RecoverReport;
    expect(refused.recovered).toEqual([]);
    expect(refused.failures).toEqual([
      expect.objectContaining({ sessionId: 'leased', name: 'SessionLeasedError', holderPid: a.process.pid }),
    ]);
    expect((await b.exited).code, b.stderr).toBe(0);
    const d = start({ mode: 'restore' });
    expect(await d.next('restore')).toBe('SessionLeasedError');

    a.process.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');

    // No sleep, no TTL to wait out: the holder's pid is gone on this host.
    const c = start({ mode: 'recover' });
    const recovered = JSON.parse(await c.next('recover')) as RecoverReport;
    expect(recovered).toEqual({ recovered: ['leased'], failures: [] });
    await c.next('tool-started');
    c.release();
    const result = JSON.parse(await c.next('result')) as ResultReport;
    expect(result).toMatchObject({ status: 'completed' });
    expect((await c.exited).code, c.stderr).toBe(0);
  });

  it('takes a session over with takeOver: the old holder’s next commit is fenced and its run ends saying so', async () => {
    const a = start({ mode: 'run' });
    await a.next('tool-started');

    const b = start({ mode: 'recover', takeOver: true });
    const taken = JSON.parse(await b.next('recover')) as RecoverReport;
    expect(taken).toEqual({ recovered: ['leased'], failures: [] });
    await b.next('tool-started');

    // A's tool finishes: the commit of its result is refused, and A's run ends with the reason.
    a.release();
    const fenced = JSON.parse(await a.next('result')) as ResultReport;
    expect(fenced.status).not.toBe('completed');
    expect(fenced.error).toMatchObject({ name: 'SessionFencedError' });
    expect(fenced.error?.message).toContain(`process ${b.process.pid}`);
    expect((await a.exited).code, a.stderr).toBe(0);

    b.release();
    expect(JSON.parse(await b.next('result'))).toMatchObject({ status: 'completed' });
    expect((await b.exited).code, b.stderr).toBe(0);
  });
});
