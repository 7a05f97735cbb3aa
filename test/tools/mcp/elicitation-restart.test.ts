import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentSystem, createSqliteStore } from 'troupe';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';
import { startScript } from './script-process.ts';

/*
 * An MCP server's question (elicitation) on a SQLite store survives the process that asked: the process is killed
 * (SIGKILL) while the question waits, the question is answered from this process through the store, and a second
 * process recovers the session, sends the tool call again and carries on with the answer. Each process is a child
 * running test/tools/mcp/fixtures/elicitation-session.ts.
 */

const script = fileURLToPath(new URL('./fixtures/elicitation-session.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'troupe-elicit-restart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the script in `mode` on the store `file`, with the MCP server at `url`. */
const start = (mode: string, file: string, url: string) => startScript(script, [mode, file, url]);

const forms = ['stateless', 'stateful'] as const;

describe.each(forms)('an MCP question after a SIGKILL, %s server', (form) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('is pending in the store, answered from another process, and the recovered run goes on', async () => {
    const asking = new AskingServer(form);
    await asking.start();
    cleanups.push(() => asking.stop());
    const file = join(dir, `${form}.db`);

    const first = start('spawn', file, asking.url);
    await first.printed('asked');
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');

    // Another process (this one) sees the question in the store and answers it.
    const beside = createAgentSystem({ store: createSqliteStore(file) });
    const [pending, ...others] = await beside.approvals();
    expect(others).toEqual([]);
    expect(pending).toMatchObject({
      sessionId: 'desk-1',
      callId: 'c1/elicitation-1',
      kind: 'question',
      tool: 'asking/elicitation',
      question: 'Who are you?',
      status: 'pending',
    });
    await beside.answer('desk-1', 'c1/elicitation-1', '{"name":"Bo"}');
    await beside.shutdown();

    const second = start('recover', file, asking.url);
    const done = await second.exited;
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    if (form === 'stateless') {
      // 2026-07-28: the question came back as the call's answer before the tool ran; the call sent again carries
      // the stored answer, with the schema's defaults.
      expect(done.stdout).toBe('result completed got elicit:accept:{"name":"Bo","age":30,"color":"blue"}\n');
      expect(asking.log.answers).toEqual(['elicit:accept:{"name":"Bo","age":30,"color":"blue"}']);
    } else {
      // 2025 era: the server ran the tool up to its question, which died with the connection; the tool is not
      // marked idempotent, so it is not sent again and the model reads why.
      expect(done.stdout).toMatch(/^result completed got .*is not sent again.*not marked idempotent/);
      expect(asking.log.answers.filter((answer) => answer.startsWith('elicit:accept'))).toEqual([]);
    }
  }, 40_000);
});

describe('an MCP question after a SIGKILL, declined while the recovered process waits', () => {
  it('reaches the waiting process through the store, and the server reads the decline', async () => {
    const asking = new AskingServer('stateless');
    await asking.start();
    try {
      const file = join(dir, 'declined.db');
      const first = start('spawn', file, asking.url);
      await first.printed('asked');
      first.child.kill('SIGKILL');
      await first.exited;

      // The recovered process asks again and waits; the decision comes from this process while it does.
      const second = start('recover', file, asking.url);
      const beside = createAgentSystem({ store: createSqliteStore(file) });
      try {
        let declined = false;
        while (!declined) {
          const [pending] = await beside.approvals();
          // Declined once the recovered session has asked again (its tool call is in flight on the server).
          if (pending && asking.log.asked === 2) {
            await beside.reject('desk-1', pending.callId, 'not now');
            declined = true;
          } else await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await beside.shutdown();
      }
      const done = await second.exited;
      expect(done.stderr).toBe('');
      expect(done.stdout).toBe('result completed got elicit:decline\n');
      expect(asking.log.answers).toEqual(['elicit:decline']);
    } finally {
      await asking.stop();
    }
  }, 40_000);
});
