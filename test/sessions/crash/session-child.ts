/**
 * The child process of crash-matrix.test.ts. It opens a system on a SQLite file with the scenario's agents and:
 *
 * - `run` mode: recovers every interrupted session, then plays the client's script: each input that neither the
 *   effect log (the client's memory of what it sent) nor the store holds is sent, queued inputs without waiting for
 *   the turn before them. Pending approvals are approved after a short delay (except the calls listed in `skip`:
 *   another process decided those). Once every session has finished all its turns it prints a JSON summary.
 * - `decide` mode: a process that only decides the pending approvals in the store (approve or reject), then exits.
 * - `approve-loop` mode: a process that approves the calls waiting in the store (those of the agents holding the
 *   conversations, or all), until it is killed. It runs beside a `run` process that leaves those calls to it: the
 *   sessions there pick the decisions up by polling the store.
 *
 * With a kill point (`kind`, `count`) it SIGKILLs itself the `count`th time it reaches a point of that kind.
 *   node --import tsx test/sessions/crash/session-child.ts   (the plan comes in TROUPE_CRASH_PLAN, as JSON)
 */
import { writeSync } from 'node:fs';
import { validateHistory } from '../../../src/core/history.ts';
import { createAgentSystem, createSqliteStore, type RunResult, type Session } from '../../../src/index.ts';
import type { StoredSessionState } from '../../../src/persistence/store.ts';
import { writeLine } from '../../support/write-line.ts';
import { appendLine, type LogLine, readLog, type UnplacedLine } from './effect-log.ts';
import { type KillKind, type ScriptedInput, scenarioAgents, sessionsScript } from './scenario.ts';

export interface ChildPlan {
  store: string;
  log: string;
  /** The process's number in the trial. */
  proc: number;
  mode: 'run' | 'decide' | 'approve-loop';
  /**
   * run mode: who approves. `self` (default): this process. `other`: an `approve-loop` process beside approves the
   * calls of the agents holding the conversations, this one a nested agent's. `other-all`: the one beside, all.
   * approve-loop mode: `other` approves only the top agents' calls, `other-all` every call.
   */
  approver?: 'self' | 'other' | 'other-all' | undefined;
  kill?: { kind: KillKind; count: number } | undefined;
  /** decide mode: what to do with every pending approval. */
  decision?: 'approve' | 'reject' | undefined;
  /** run mode: how long the scenario may take before the process reports what it waits for. Default 15 s. */
  watchdogMs?: number | undefined;
  /** run mode: calls the approver must never see pending (another process decided them). */
  skip?: string[] | undefined;
  /**
   * The store runs with group commit (every mode: the commits of the sessions here share transactions); `thread`:
   * its groups written by the store's writer thread.
   */
  groupCommit?: boolean | 'thread' | undefined;
}

/** What a run-mode child prints last. */
export interface ChildSummary {
  /** What interrupted() listed before recover(), and after it (nothing: every session runs here then). */
  interrupted: string[];
  interruptedAfter: string[];
  recovered: string[];
  failures: string[];
  errors: string[];
  sessions: Record<
    string,
    {
      status: string;
      turns: number;
      userInputs: string[];
      lastResult: { status: string; stopReason: string; text: string; historyValid: boolean } | null;
      /** Seqs a client reading `session.events({ after: -1 })` here got, up to the last one stored (null: not live). */
      eventSeqs: number[] | null;
    }
  >;
}

const plan = JSON.parse(process.env.TROUPE_CRASH_PLAN ?? 'null') as ChildPlan;
const errors: string[] = [];
const write = (line: UnplacedLine) =>
  appendLine(plan.log, { ...line, proc: plan.proc, pid: process.pid } as LogLine);

const reached = new Map<KillKind, number>();
function point(kind: KillKind, effect?: { kind: 'model' | 'tool'; session: string; key: string }): void {
  if (plan.kill?.kind !== kind) return;
  const count = (reached.get(kind) ?? 0) + 1;
  reached.set(kind, count);
  if (count !== plan.kill.count) return;
  write({ type: 'kill', point: `${kind}:${count}`, ...(effect ? { effect } : {}) });
  process.kill(process.pid, 'SIGKILL');
}

process.on('unhandledRejection', (reason) => {
  writeSync(2, `unhandled rejection: ${String((reason as Error)?.stack ?? reason)}\n`);
  process.exit(3);
});

// SIGKILL is what the matrix does, not power loss: 'normal' keeps every commit across a killed process.
const opened = createSqliteStore(plan.store, {
  synchronous: 'normal',
  groupCommit: plan.groupCommit === 'thread' ? { writer: 'thread' } : plan.groupCommit === true,
});
/** Called each time a commit of the store settles: what waits for something to be stored looks again then. */
let commitSettled: (() => void)[] = [];
const store: typeof opened = {
  ...opened,
  commit(sessionId, batch) {
    const result = opened.commit(sessionId, batch);
    const notify = () => {
      const waiting = commitSettled;
      commitSettled = [];
      for (const resolve of waiting) resolve();
    };
    const startsTurn =
      batch.events?.some((event) => event.type === 'run_start' && event.depth === 0) === true;
    if (result instanceof Promise)
      result.then(() => {
        if (startsTurn) point('turn-stored');
        notify();
      }, notify);
    else if (startsTurn) point('turn-stored');
    return result;
  },
} as typeof opened;

/**
 * Resolves once the store holds the input. With group commit, send() and spawn() return before the input is on disk
 * (no promise of theirs says when it is): an input counts as sent, here, once it is stored.
 */
async function untilStored(id: string, input: string): Promise<void> {
  while (!inputsInStore(store.load(id)).has(input))
    await new Promise<void>((resolve) => commitSettled.push(resolve));
}
const { triage, all } = scenarioAgents({ effect: (line) => write(line), point });
const system = createAgentSystem({ store, agents: all, approvalPollMs: 20 });

/** Inputs the store holds for a session: in its transcript, as its turn in progress, or queued. */
function inputsInStore(state: StoredSessionState | undefined): Set<string> {
  const held = new Set<string>();
  if (!state) return held;
  for (const message of state.session.transcript)
    if (message.role === 'user' && typeof message.content === 'string') held.add(message.content);
  const turnInput = state.session.turn?.input;
  if (typeof turnInput === 'string') held.add(turnInput);
  for (const queued of state.session.queued) if (typeof queued === 'string') held.add(queued);
  return held;
}

/** Waits until the session has no turn running or queued. */
async function settle(session: Session): Promise<void> {
  while (session.status === 'running' || session.status === 'awaiting') await session.result;
}

async function drive(id: string, inputs: readonly ScriptedInput[]): Promise<Session | undefined> {
  const sent = new Set(
    readLog(plan.log).flatMap((line) => (line.type === 'sent' && line.session === id ? [line.input] : [])),
  );
  const held = inputsInStore(store.load(id));
  let session = system.get(id);
  for (const input of inputs) {
    if (sent.has(input.text) || held.has(input.text)) continue;
    if (session && !input.queued) await settle(session);
    if (session) {
      session.send(input.text).catch((error: unknown) => errors.push(`send ${input.text}: ${String(error)}`));
    } else if (store.load(id)) {
      session = await system.restore(id, triage, { input: input.text });
    } else {
      session = system.spawn(triage, input.text, { sessionId: id });
    }
    if (plan.groupCommit === true || plan.groupCommit === 'thread') await untilStored(id, input.text);
    write({ type: 'sent', session: id, input: input.text });
    point('send');
  }
  if (session) await settle(session);
  return session;
}

/** Approves what waits for a person, after a short delay (a person is never instant). */
function startApprover(skip: ReadonlySet<string>, which: 'all' | 'top' | 'nested' = 'all'): () => void {
  const seen = new Set<string>();
  let polling = false;
  const timer = setInterval(() => {
    if (polling) return;
    polling = true;
    Promise.resolve(system.approvals())
      .then((pending) => {
        for (const record of pending) {
          const nested = record.route.includes('>');
          if ((which === 'top' && nested) || (which === 'nested' && !nested)) continue;
          if (seen.has(record.callId)) continue;
          seen.add(record.callId);
          if (skip.has(record.callId)) {
            errors.push(`${record.callId} was decided by another process but is pending again`);
            continue;
          }
          point('approval-seen');
          point(record.route.includes('>') ? 'approval-seen-nested' : 'approval-seen-top');
          setTimeout(() => {
            system.approve(record.sessionId, record.callId).then(
              () => {
                write({
                  type: 'decided',
                  session: record.sessionId,
                  callId: record.callId,
                  tool: record.tool,
                  decision: 'approve',
                });
                point('approval-decided');
              },
              (error: unknown) => errors.push(`approve ${record.callId}: ${String(error)}`),
            );
          }, 25);
        }
      })
      .catch((error: unknown) => errors.push(`approvals(): ${String(error)}`))
      .finally(() => {
        polling = false;
      });
  }, 10);
  return () => clearInterval(timer);
}

/** A recovery that hangs (a session waiting for something that never comes) fails with what each session waits for. */
function watchdog(ms: number): void {
  setTimeout(() => {
    const stuck = [...sessionsScript.keys()].map((id) => {
      const state = store.load(id);
      const waiting = [...(state?.runs ?? [])].flatMap(([route, checkpoint]) =>
        checkpoint.approvals ? [`${route} waits for ${JSON.stringify(checkpoint.approvals)}`] : [],
      );
      const approvals = (state?.approvals ?? []).map((record) => `${record.callId} ${record.status}`);
      return `${id}: live ${system.get(id)?.status ?? 'not running'}, stored ${state?.session.status}, turns ${state?.session.turns}, nested runs: [${waiting.join('; ')}], approvals: [${approvals.join(', ')}]`;
    });
    writeSync(2, `stuck after ${ms} ms: ${stuck.join(' | ')}\n`);
    process.exit(4);
  }, ms).unref();
}

async function runMode(): Promise<void> {
  watchdog(plan.watchdogMs ?? 15_000);
  void (async () => {
    for await (const event of system.events())
      if (event.type === 'run_end' && event.depth === 0) point('turn-end');
  })();
  writeLine('ready');
  const interrupted = (await system.interrupted()).map((summary) => summary.sessionId).sort();
  const recovered = await system.recover();
  const interruptedAfter = (await system.interrupted()).map((summary) => summary.sessionId);
  // A session's poll for decisions stored elsewhere does not keep a process alive (its timer is unref'd): a
  // process that waits for another one's approvals holds itself open, like a server would.
  const keepAlive = setInterval(() => undefined, 1_000);
  const stopApprover =
    plan.approver === 'other-all'
      ? () => undefined
      : startApprover(new Set(plan.skip ?? []), plan.approver === 'other' ? 'nested' : 'all');
  const ids = [...sessionsScript.keys()];
  const sessions = await Promise.all(ids.map((id) => drive(id, sessionsScript.get(id) ?? [])));
  stopApprover();
  clearInterval(keepAlive);
  const summary: ChildSummary = {
    interrupted,
    interruptedAfter,
    recovered: recovered.sessions.map((session) => session.sessionId).sort(),
    failures: recovered.failures.map((failure) => `${failure.sessionId}: ${failure.error.message}`),
    errors,
    sessions: {},
  };
  for (const [index, id] of ids.entries()) {
    const session = sessions[index];
    const state = store.load(id);
    let lastResult: ChildSummary['sessions'][string]['lastResult'] = null;
    let eventSeqs: number[] | null = null;
    if (session) {
      // The whole log, across the processes that wrote it: older events come back from the store.
      eventSeqs = [];
      const lastSeq = state?.lastSeq ?? -1;
      const reading = new AbortController();
      if (lastSeq >= 0)
        for await (const event of session.events({ after: -1, signal: reading.signal })) {
          eventSeqs.push(event.seq);
          if (event.seq >= lastSeq) break;
        }
      reading.abort();
      const result: RunResult<unknown> = await session.result;
      let historyValid = true;
      try {
        validateHistory(result.history);
      } catch {
        historyValid = false;
      }
      lastResult = { status: result.status, stopReason: result.stopReason, text: result.text, historyValid };
    }
    summary.sessions[id] = {
      status: state?.session.status ?? 'missing',
      turns: state?.session.turns ?? 0,
      userInputs: (state?.session.transcript ?? []).flatMap((message) =>
        message.role === 'user' && typeof message.content === 'string' ? [message.content] : [],
      ),
      lastResult,
      eventSeqs,
    };
  }
  await system.shutdown();
  store.close();
  writeLine(`summary ${JSON.stringify(summary)}`);
}

async function decideMode(): Promise<void> {
  writeLine('ready');
  const decided: string[] = [];
  for (const record of await system.approvals()) {
    if (plan.decision === 'reject')
      await system.reject(record.sessionId, record.callId, 'refused by the second process');
    else await system.approve(record.sessionId, record.callId);
    write({
      type: 'decided',
      session: record.sessionId,
      callId: record.callId,
      tool: record.tool,
      decision: plan.decision ?? 'approve',
    });
    decided.push(record.callId);
  }
  await system.shutdown();
  store.close();
  writeLine(`decided ${JSON.stringify(decided)}`);
}

/** Approves, from this process, every call that waits in the store, until it is killed. */
async function approveLoop(): Promise<void> {
  writeLine('ready');
  // With kills, only the top agents' calls: a decision stored for a nested agent's call while its session is down
  // is not applied on recovery.
  startApprover(new Set(), plan.approver === 'other-all' ? 'all' : 'top');
  await new Promise(() => undefined);
}

(plan.mode === 'decide' ? decideMode() : plan.mode === 'approve-loop' ? approveLoop() : runMode()).then(
  () => process.exit(0),
  (error: unknown) => {
    writeSync(2, `child failed: ${String((error as Error)?.stack ?? error)}\n`);
    process.exit(2);
  },
);
