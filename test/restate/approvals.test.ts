import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.ts';
import { verifyAuditLog } from '../../src/audit/verify-audit-log.ts';
import { validateHistory } from '../../src/core/history.ts';
import { type RestateSession, restateClient } from '../../src/restate/client.ts';
import type { StoredApproval } from '../../src/restate/state.ts';
import { ApprovalError } from '../../src/sessions/approval-error.ts';
import { readEffects, startCounts } from './support/effects-log.ts';
import {
  freePort,
  type RestateServer,
  restateUnavailable,
  startRestateServer,
  waitFor,
} from './support/restate-server.ts';
import { type ServiceProcess, startService } from './support/service-process.ts';

const unavailable = restateUnavailable();
if (unavailable) console.warn(`Skipping the Restate tests: ${unavailable}.`);

describe.skipIf(unavailable !== undefined)('troupe/restate: approvals from another process', () => {
  let server: RestateServer;
  let service: ServiceProcess;
  let port: number;
  let dir: string;
  let effectsLog: string;
  let auditLog: string;

  const startEndpoint = async () => {
    service = await startService({ PORT: String(port), EFFECTS_LOG: effectsLog, AUDIT_LOG: auditLog });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-approvals-'));
    effectsLog = join(dir, 'effects.log');
    auditLog = join(dir, 'audit.jsonl');
    server = await startRestateServer();
    port = await freePort();
    await startEndpoint();
    await server.register(`http://127.0.0.1:${port}`);
  }, 60_000);

  afterAll(async () => {
    await service?.kill();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The user's process (it waits for the turn) and the approver's (another client), both through the ingress. */
  const user = (id: string) => restateClient({ ingress: server.ingress }).session('clerk', id);
  const approver = (id: string) => restateClient({ ingress: server.ingress }).session('clerk', id);

  async function pending(session: RestateSession, count: number): Promise<StoredApproval[]> {
    let found: StoredApproval[] = [];
    await waitFor(async () => {
      found = await session.pendingApprovals();
      return found.length === count;
    }, 20_000);
    return found;
  }

  it('approves and answers from a second client while the turn waits; the session’s mailbox waits too', async () => {
    const turn = user('c1').send('[c1/t1] I want my money back');
    const waiting = await pending(approver('c1'), 2);
    const [refund, question] = waiting;
    expect(refund).toMatchObject({ tool: 'refund', kind: 'approval', agent: 'clerk', status: 'pending' });
    expect(question).toMatchObject({
      tool: 'ask_human',
      kind: 'question',
      question: 'Which account for c1/t1?',
    });
    expect(await approver('c1').status()).toMatchObject({
      turn: { number: 1, status: 'waiting' },
      pendingApprovals: 2,
    });
    // What the turn wrote before it suspended is visible to shared handlers.
    const events = await approver('c1').events();
    expect(events.filter((event) => event.type === 'approval_requested')).toHaveLength(2);

    // A second turn on the same session is queued behind the waiting one (exclusive handlers).
    const queued = await user('c1').start('[c1/t2] and another thing');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await approver('c1').status()).toMatchObject({ turn: { number: 1, status: 'waiting' } });

    // Wrong decisions are refused (as in-process: ApprovalErrors) and change nothing.
    await expect(approver('c1').approve(question?.callId as string)).rejects.toThrow(
      `Session "c1": cannot decide on call "${question?.callId}": it is a question: use answer() or reject().`,
    );
    await expect(approver('c1').answer(refund?.callId as string, 'yes')).rejects.toBeInstanceOf(
      ApprovalError,
    );

    expect(await approver('c1').approve(refund?.callId as string)).toEqual({
      callId: refund?.callId,
      status: 'approved',
    });
    // Deciding again is refused, before and after the turn has recorded the decision.
    await expect(approver('c1').reject(refund?.callId as string, 'no')).rejects.toThrow(
      `Session "c1": cannot decide on call "${refund?.callId}": it was already approved.`,
    );
    await waitFor(async () => (await approver('c1').approvals())[0]?.status === 'approved', 10_000);
    await expect(approver('c1').approve(refund?.callId as string)).rejects.toBeInstanceOf(ApprovalError);
    expect(await approver('c1').answer(question?.callId as string, 'account 7')).toMatchObject({
      status: 'answered',
    });

    const result = await turn;
    expect(result).toMatchObject({ status: 'completed', text: 'clerk c1/t1: refunded 2 | account 7' });
    validateHistory(result.history);

    // The queued turn ran after it, and waits for its own decisions; the first turn's records stay listed.
    const next = await pending(approver('c1'), 2);
    expect(await approver('c1').status()).toMatchObject({ turns: 1, turn: { number: 2, status: 'waiting' } });
    expect((await approver('c1').approvals()).map(({ turn, status }) => [turn, status])).toEqual([
      [1, 'approved'],
      [1, 'answered'],
      [2, 'pending'],
      [2, 'pending'],
    ]);
    await approver('c1').reject(next[0]?.callId as string, 'not today');
    await approver('c1').reject(next[1]?.callId as string, 'no');
    const second = await restateClient({ ingress: server.ingress }).result(queued.invocationId);
    expect(second.status).toBe('completed');
    expect(startCounts(readEffects(effectsLog)).get('c1/t1|tool|f2')).toBe(1);
  });

  it('rejections go back to the model and nothing runs', async () => {
    const turn = user('c2').send('[c2/t1] refund');
    const [refund, question] = await pending(approver('c2'), 2);
    await approver('c2').reject(refund?.callId as string, 'over the limit');
    await approver('c2').reject(question?.callId as string, 'ask support');
    const result = await turn;
    expect(result.status).toBe('completed');
    expect(result.text).toBe(
      'clerk c2/t1: Not run: a person rejected this call: over the limit | No answer: the person declined to answer: ask support',
    );
    expect(readEffects(effectsLog).filter((line) => line.tag === 'c2/t1' && line.kind === 'tool')).toEqual(
      [],
    );
  });

  it('ends a turn cancelled while it waits as aborted, and keeps the session usable', async () => {
    const started = await user('c4').start('[c4/t1] refund, then cancel');
    await pending(approver('c4'), 2);
    const cancelled = await fetch(`${server.admin}/invocations/${started.invocationId}/cancel`, {
      method: 'PATCH',
    });
    expect(cancelled.ok).toBe(true);
    const result = await restateClient({ ingress: server.ingress }).result(started.invocationId);
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
    validateHistory(result.history);
    expect(await approver('c4').status()).toMatchObject({
      turns: 1,
      turn: { status: 'done' },
      pendingApprovals: 0,
    });
    // Nobody waits for the requests any more: they are withdrawn, and a late decision is refused saying why.
    const records = await approver('c4').approvals();
    expect(records.map((record) => [record.status, record.decision])).toEqual([
      ['withdrawn', { type: 'reject', reason: 'the turn ended before a decision' }],
      ['withdrawn', { type: 'reject', reason: 'the turn ended before a decision' }],
    ]);
    await expect(approver('c4').approve(records[0]?.callId as string)).rejects.toThrow(
      `Session "c4": cannot decide on call "${records[0]?.callId}": it is no longer waiting: the turn ended before a decision.`,
    );
    expect(readEffects(effectsLog).filter((line) => line.tag === 'c4/t1' && line.kind === 'tool')).toEqual(
      [],
    );
  });

  it('survives a SIGKILL of the service while the turn waits: decisions reach the restarted one', async () => {
    const turn = user('c3').send('[c3/t1] refund after a crash');
    const [refund, question] = await pending(approver('c3'), 2);
    await service.kill('SIGKILL');
    await startEndpoint();
    // One decision through Restate's own awakeable endpoint, one through the object's shared handler.
    const resolved = await fetch(`${server.ingress}/restate/awakeables/${refund?.awakeableId}/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'approve' }),
    });
    expect(resolved.ok).toBe(true);
    await approver('c3').answer(question?.callId as string, 'the usual one');
    const result = await turn;
    expect(result).toMatchObject({ status: 'completed', text: 'clerk c3/t1: refunded 2 | the usual one' });
    validateHistory(result.history);
    const counts = startCounts(readEffects(effectsLog).filter((line) => line.tag === 'c3/t1'));
    // The first model call was journaled before the crash: it did not run again. The refund ran once.
    expect([...counts.entries()].sort()).toEqual([
      ['c3/t1|clerk|m2', 1],
      ['c3/t1|clerk|m5', 1],
      ['c3/t1|tool|f2', 1],
    ]);
    // The audit trail spans both processes: every request and decision once, one intact chain.
    expect(verifyAuditLog(auditLog)).toMatchObject({ ok: true });
    const records = readFileSync(auditLog, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditRecord)
      .filter((record) => record.sessionId === 'c3');
    expect(records.map((record) => `${record.type} ${(record.data as { callId: string }).callId}`)).toEqual([
      `approval_requested ${refund?.callId}`,
      `approval_requested ${question?.callId}`,
      `approval_decided ${refund?.callId}`,
      `approval_decided ${question?.callId}`,
    ]);
  });
});
