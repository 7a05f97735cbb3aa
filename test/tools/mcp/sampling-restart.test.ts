import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';
import { startScript } from './script-process.ts';

/*
 * An MCP server's sampling request, answered in a durable session on a SQLite store, is answered by the model once:
 * the process is killed (SIGKILL) after the answer reached the server and before the tool call ended, a second
 * process recovers the session and sends the call again, and the server's same request gets the recorded answer.
 * Each process is a child running test/tools/mcp/fixtures/sampling-session.ts; every sampling model call is a line
 * in a count file.
 */

const script = fileURLToPath(new URL('./fixtures/sampling-session.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'troupe-sampling-restart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sampledIn = (countFile: string) => readFileSync(countFile, 'utf8').trim().split('\n');

const forms = ['stateless', 'stateful'] as const;

describe.each(forms)('an MCP sampling request after a SIGKILL, %s server', (form) => {
  const servers: AskingServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
  });

  /** Runs the first process until the server got its sampling answer, and kills it there. */
  async function killedAfterSampling(name: string) {
    const asking = new AskingServer(form);
    await asking.start();
    servers.push(asking);
    const file = join(dir, `${form}-${name}.db`);
    const count = join(dir, `${form}-${name}.count`);
    const reached = new Promise<void>((resolve) => {
      asking.log.onAnswer = resolve;
    });
    // The tool holds the call open once it has the answer: the call is in flight when the process dies.
    asking.log.hold = new Promise<void>(() => undefined);
    const first = startScript(script, ['spawn', file, asking.url, count]);
    await Promise.race([reached, first.exited]);
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(asking.log.answers).toEqual(['sampling:a short summary']);
    expect(sampledIn(count)).toHaveLength(1);
    asking.log.hold = undefined;
    asking.log.onAnswer = undefined;
    return { asking, file, count };
  }

  it('answers the call sent again with the recorded answer: one model call in all, counted once', async () => {
    const { asking, file, count } = await killedAfterSampling('same');
    const second = startScript(script, ['recover', file, asking.url, count]);
    const done = await second.exited;
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    // The server asked again and got the answer the model gave the first process.
    expect(asking.log.answers).toEqual(['sampling:a short summary', 'sampling:a short summary']);
    expect(sampledIn(count)).toHaveLength(1);

    // The same turn without a crash spends the same: the sampling call is in the result once.
    const straight = new AskingServer(form);
    await straight.start();
    servers.push(straight);
    const alone = startScript(script, [
      'straight',
      join(dir, `${form}-straight.db`),
      straight.url,
      join(dir, `${form}-straight.count`),
    ]);
    const reference = await alone.exited;
    expect(reference.stderr).toBe('');
    expect(done.stdout).toBe(reference.stdout);
    expect(done.stdout).toBe('result completed got sampling:a short summary | usage 60/13 | calls 3\n');
  }, 60_000);

  it('asks the model again when the call sent again asks for something else, and counts both calls', async () => {
    const { asking, file, count } = await killedAfterSampling('other');
    asking.log.samplingSuffix = ' (again)';
    const second = startScript(script, ['recover', file, asking.url, count]);
    const done = await second.exited;
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(sampledIn(count)).toEqual([
      JSON.stringify('Summarize: the report'),
      JSON.stringify('Summarize: the report (again)'),
    ]);
    expect(done.stdout).toBe('result completed got sampling:a short summary | usage 100/20 | calls 4\n');
  }, 60_000);
});
