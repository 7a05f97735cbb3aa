import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentSystem, createSqliteStore, defineAgent, tool } from '../../src/index.ts';
import { scriptedModel } from '../../src/testing/index.ts';

/*
 * A session keeps its process alive while its turn runs or waits for a person, whether it was spawned or recovered;
 * a reader of a live session's events does too; an idle or closed session does not; shutdown() lets it go. Each case
 * is a plain script run in a child process of its own (test/sessions/lifecycle/process-child.ts): the exit code and
 * what it printed are the outcome. A script that exits too early ends with code 13 (an unsettled top-level await).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const child = fileURLToPath(new URL('./lifecycle/process-child.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'troupe-lifetime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the child in `mode`; `whileRunning` runs beside it (e.g. a decision from another process). 20 s at most. */
function runChild(mode: string, file?: string, whileRunning?: (exited: () => boolean) => Promise<void>) {
  return new Promise<Exit>((resolve, reject) => {
    const process_ = spawn(
      process.execPath,
      ['--no-warnings', '--import', 'tsx', child, mode, ...(file ? [file] : [])],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exit: Exit = { code: null, stdout: '', stderr: '' };
    let exited = false;
    const guard = setTimeout(() => process_.kill('SIGKILL'), 20_000);
    process_.stdout.on('data', (chunk: Buffer) => {
      exit.stdout += chunk.toString();
    });
    process_.stderr.on('data', (chunk: Buffer) => {
      exit.stderr += chunk.toString();
    });
    process_.on('error', reject);
    const beside = whileRunning?.(() => exited) ?? Promise.resolve();
    process_.on('close', (code) => {
      exited = true;
      clearTimeout(guard);
      void beside.then(() => resolve({ ...exit, code }), reject);
    });
  });
}

/** Approves the pending call of the store from this process (as a web server beside the script would). */
async function approveFromBeside(file: string, exited: () => boolean): Promise<void> {
  const system = createAgentSystem({ store: createSqliteStore(file) });
  try {
    while (!exited()) {
      const [pending] = await system.approvals();
      if (pending) {
        await system.approve(pending.sessionId, pending.callId);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await system.shutdown();
  }
}

describe('the process a session runs in', () => {
  it('stays alive while a spawned session waits for a person, until the decision comes from another process', async () => {
    const file = join(dir, 'spawned.db');
    const exit = await runChild('spawn-await', file, (exited) => approveFromBeside(file, exited));
    expect(exit.stderr).toBe('');
    expect(exit.stdout).toBe('result completed refund done\n');
    expect(exit.code).toBe(0);
  });

  it('stays alive the same way for a recovered session in the same state', async () => {
    const file = join(dir, 'recovered.db');
    const refund = tool({
      name: 'refund',
      description: 'refunds an order',
      input: z.object({ order: z.string() }),
      needsApproval: true,
      execute: ({ order }) => `refunded ${order}`,
    });
    const clerk = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ id: 'call-1', name: 'refund', args: { order: 'A-1' } }], stopReason: 'tool_use' },
      ]),
      tools: [refund],
    });
    const system = createAgentSystem({ store: createSqliteStore(file) });
    const session = system.spawn(clerk, 'refund A-1', { sessionId: 'desk-1' });
    for await (const event of session.events()) if (event.type === 'approval_requested') break;
    await system.shutdown();

    const exit = await runChild('recover-await', file, (exited) => approveFromBeside(file, exited));
    expect(exit.stderr).toBe('');
    expect(exit.stdout).toBe('result completed refund done\n');
    expect(exit.code).toBe(0);
  });

  it('is let go by shutdown(): a session waiting for a person is suspended and the script ends', async () => {
    const exit = await runChild('shutdown');
    expect(exit.stderr).toBe('');
    expect(exit.stdout).toBe('result stopped suspended\n');
    expect(exit.code).toBe(0);
  });

  it('is not held by a session whose turn has finished', async () => {
    const exit = await runChild('idle');
    expect(exit.stdout).toBe('result completed hello\n');
    expect(exit.code).toBe(0);
  });

  it("stays alive while a reader waits for a finished turn's session, until the reader's signal ends it", async () => {
    const exit = await runChild('events-after');
    expect(exit.stderr).toBe('');
    expect(exit.stdout).toBe('read run_start..run_end\n');
    expect(exit.code).toBe(0);
  });
});
