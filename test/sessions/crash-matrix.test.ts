/**
 * The crash matrix: durable sessions killed with SIGKILL at seeded points, then recovered by a new process, checked
 * from outside (the effect log the children append to, and the SQLite file read after each death). See
 * crash/session-child.ts for the child, crash/scenario.ts for the scenario, crash/verify.ts for the rules.
 *
 * TROUPE_CRASH_SEED=<n> replays another matrix; every failure names its trial and the seed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolMessage } from '../../src/core/messages.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { readLog } from './crash/effect-log.ts';
import type { KillKind } from './crash/scenario.ts';
import { sessionsScript, toolMarker } from './crash/scenario.ts';
import type { ChildPlan, ChildSummary } from './crash/session-child.ts';
import {
  type FinalSession,
  type ProcessOutcome,
  snapshotStore,
  type TrialFigures,
  verifyTrial,
} from './crash/verify.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const child = fileURLToPath(new URL('./crash/session-child.ts', import.meta.url));
const seed = Number(process.env.TROUPE_CRASH_SEED ?? 20_260_611);
/** Trials run side by side: a child mostly waits (on its own timers and on SQLite). */
const concurrency = 4;

/** A small seeded generator (mulberry32), so every run of the matrix kills at the same points. */
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

/** How the trial's store commits: one transaction per commit, group commit, or group commit on a thread. */
type GroupCommit = boolean | 'thread';

/** One process of a trial: it kills itself at a point, is killed by the parent after a delay, or runs to the end. */
type Step =
  | {
      mode: 'run';
      kill?: { kind: KillKind; count: number };
      killAfterMs?: number;
      /**
       * `other`: a second process approves the top agents' calls while this one runs (a nested agent's calls are
       * approved here); `other-all`: that process approves every call.
       */
      approver?: 'self' | 'other' | 'other-all';
      /** How long the process may take before it reports what it waits for and exits. */
      watchdogMs?: number;
    }
  | { mode: 'decide'; decision: 'approve' | 'reject' };

interface Trial {
  name: string;
  steps: Step[];
}

interface ChildOutcome {
  signal: NodeJS.Signals | null;
  code: number | null;
  stderr: string;
  summary?: ChildSummary;
  decided?: string[];
}

function runChild(
  plan: ChildPlan,
  killAfterMs: number | undefined,
  stop?: AbortSignal,
): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const process_ = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', child], {
      cwd: root,
      env: { ...process.env, TROUPE_CRASH_PLAN: JSON.stringify(plan) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const outcome: ChildOutcome = { signal: null, code: null, stderr: '' };
    let stdout = '';
    // Never wait forever, whatever the child does (a hung recovery fails the trial: it ends without a summary).
    const guard = setTimeout(() => process_.kill('SIGKILL'), 30_000);
    stop?.addEventListener('abort', () => process_.kill('SIGKILL'), { once: true });
    process_.stderr.on('data', (chunk: Buffer) => {
      outcome.stderr += chunk.toString();
    });
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const lines = stdout.split('\n');
      stdout = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready' && killAfterMs !== undefined)
          setTimeout(() => process_.kill('SIGKILL'), killAfterMs);
        if (line.startsWith('summary ')) outcome.summary = JSON.parse(line.slice(8)) as ChildSummary;
        if (line.startsWith('decided ')) outcome.decided = JSON.parse(line.slice(8)) as string[];
      }
    });
    process_.on('error', reject);
    process_.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ ...outcome, code, signal });
    });
  });
}

interface TrialReport {
  name: string;
  problems: string[];
  figures: TrialFigures;
  /** Events of the nested agent that do not say where it runs (route and depth), kept apart from `problems`. */
  misattributed: string[];
  /** Calls approved by a process running beside the sessions' own (picked up by their poll of the store). */
  decidedBeside: number;
}

/** Events of the researcher (an agent used as a tool) must carry its route and depth 1. */
function misattributedEvents(final: ReturnType<typeof finalState>): string[] {
  return [...final].flatMap(([id, session]) =>
    session.events.flatMap((event) =>
      event.agent === 'researcher' && (event.depth !== 1 || !event.route.includes('>'))
        ? [`${id} #${event.seq} ${event.type}: route ${event.route}, depth ${event.depth}`]
        : [],
    ),
  );
}

function finalState(file: string) {
  const store = createSqliteStore(file, { synchronous: 'normal' });
  try {
    const final = new Map<string, FinalSession>();
    for (const id of sessionsScript.keys()) {
      const state = store.load(id);
      if (state)
        final.set(id, {
          status: state.session.status,
          turns: state.session.turns,
          transcript: state.session.transcript,
          events: store.readEvents(id, -1),
          leftovers: [
            ...(state.session.turn ? ['a turn in progress'] : []),
            ...(state.session.queued.length > 0 ? ['queued inputs'] : []),
            ...(state.runs.size > 0 ? ['nested-run checkpoints'] : []),
            ...(state.journal.size > 0 ? ['journal entries'] : []),
            ...state.approvals
              .filter((record) => record.status === 'pending')
              .map((record) => `pending ${record.callId}`),
          ],
        });
    }
    return final;
  } finally {
    store.close();
  }
}

/** What a recovering process says about itself: what it resumed, how its sessions ended, what a client read. */
function checkSummary(proc: number, summary: ChildSummary, previous: ProcessOutcome | undefined): string[] {
  const problems: string[] = [];
  // recover() resumes exactly what interrupted() listed: the sessions the store left running or awaiting.
  const resumable = [...(previous?.after ?? new Map())]
    .filter(([, session]) => ['running', 'awaiting', 'suspended'].includes(session.status))
    .map(([id]) => id)
    .sort();
  const { interrupted, interruptedAfter, recovered } = summary;
  if (
    JSON.stringify(interrupted) !== JSON.stringify(resumable) ||
    JSON.stringify(recovered) !== JSON.stringify(resumable)
  )
    problems.push(
      `process ${proc}: interrupted() ${JSON.stringify(interrupted)}, recovered ${JSON.stringify(recovered)}, the store left ${JSON.stringify(resumable)} to resume`,
    );
  if (interruptedAfter.length > 0)
    problems.push(
      `process ${proc}: interrupted() still lists ${JSON.stringify(interruptedAfter)} after recover()`,
    );
  for (const error of [...summary.errors, ...summary.failures]) problems.push(`process ${proc}: ${error}`);
  for (const [id, session] of Object.entries(summary.sessions)) {
    const { lastResult, eventSeqs } = session;
    if (lastResult && (lastResult.status !== 'completed' || !lastResult.historyValid))
      problems.push(`process ${proc}: session ${id} ended ${JSON.stringify(lastResult)}`);
    // A client reading from the start gets every event, those of earlier processes included, without a gap.
    if (eventSeqs?.some((seq, index) => seq !== index))
      problems.push(
        `process ${proc}: session ${id}: events({ after: -1 }) gave seqs ${JSON.stringify(eventSeqs)}`,
      );
  }
  return problems;
}

async function runTrial(trial: Trial, groupCommit: GroupCommit): Promise<TrialReport> {
  const directory = mkdtempSync(join(tmpdir(), 'troupe-matrix-'));
  const file = join(directory, 'sessions.db');
  const log = join(directory, 'effects.log');
  const problems: string[] = [];
  const processes: ProcessOutcome[] = [];
  let decision: 'approve' | 'reject' | undefined;
  let skip: string[] = [];
  try {
    for (const [proc, step] of trial.steps.entries()) {
      const plan: ChildPlan =
        step.mode === 'decide'
          ? { store: file, log, proc, mode: 'decide', decision: step.decision, groupCommit }
          : {
              groupCommit,
              store: file,
              log,
              proc,
              mode: 'run',
              kill: step.kill,
              skip,
              approver: step.approver,
              watchdogMs: step.watchdogMs,
            };
      // The approving process beside this one: its process number is apart from the trial's sequence.
      const stopApprover = new AbortController();
      const approver =
        step.mode === 'run' && (step.approver === 'other' || step.approver === 'other-all')
          ? runChild(
              {
                store: file,
                log,
                proc: 100 + proc,
                mode: 'approve-loop',
                approver: step.approver,
                groupCommit,
              },
              undefined,
              stopApprover.signal,
            )
          : undefined;
      const outcome = await runChild(plan, step.mode === 'run' ? step.killAfterMs : undefined);
      stopApprover.abort();
      const beside = await approver;
      if (beside && beside.signal !== 'SIGKILL')
        problems.push(
          `the approving process ${100 + proc} ended by itself (${beside.code}): ${beside.stderr}`,
        );
      const killed = outcome.signal === 'SIGKILL';
      if (!killed && outcome.code !== 0)
        problems.push(`process ${proc} exited with ${outcome.code}: ${outcome.stderr.slice(0, 2_000)}`);
      if (outcome.summary) problems.push(...checkSummary(proc, outcome.summary, processes.at(-1)));
      if (step.mode === 'decide') {
        decision = step.decision;
        skip = outcome.decided ?? [];
      }
      processes.push({ proc, mode: step.mode, killed, after: snapshotStore(file) });
    }
    const lines = readLog(log);
    const final = finalState(file);
    const verdict = verifyTrial(lines, processes, final, { groupCommit });
    problems.push(...verdict.problems);
    if (decision) problems.push(...checkDecisions(decision, lines, processes, final));
    return {
      name: trial.name,
      problems,
      figures: verdict.figures,
      misattributed: misattributedEvents(final),
      decidedBeside: lines.filter((line) => line.type === 'decided' && line.proc >= 100).length,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * A decision stored by another process is applied: an approved call runs once, in the process after, and its
 * result reaches the model; a rejected call never runs and the model reads the reason. A nested agent's `confirm`
 * result reaches the top through the researcher's findings.
 */
function checkDecisions(
  decision: 'approve' | 'reject',
  lines: ReturnType<typeof readLog>,
  processes: readonly ProcessOutcome[],
  final: ReturnType<typeof finalState>,
): string[] {
  const problems: string[] = [];
  const decider = processes.find((outcome) => outcome.mode === 'decide');
  if (!decider) return ['no process decided'];
  const before = processes[decider.proc - 1];
  const decided = lines.flatMap((line) =>
    line.type === 'decided' && line.proc === decider.proc ? [line] : [],
  );
  if (decided.length === 0) problems.push('the second process found no pending approval to decide');
  const answers = [...final.values()]
    .flatMap((session) => session.transcript)
    .filter((message): message is ToolMessage => message.role === 'tool');
  for (const { callId, tool } of decided) {
    const pendingBefore = [...(before?.after.values() ?? [])].some((session) =>
      session.pendingApprovals.includes(callId),
    );
    if (!pendingBefore) problems.push(`${callId} was not pending in the store when the first process died`);
    if ([...decider.after.values()].some((session) => session.pendingApprovals.includes(callId)))
      problems.push(`${callId} is still pending after the second process decided it`);
    const starts = lines.filter(
      (line) =>
        line.type === 'effect' && line.kind === 'tool' && line.key === callId && line.phase === 'start',
    );
    const answer =
      tool === 'refund'
        ? answers.filter((message) => message.toolCallId === callId)
        : answers.filter(
            (message) => message.name === 'researcher' && message.content.includes('(confirm: '),
          );
    const expected = decision === 'approve' ? toolMarker(callId) : 'refused by the second process';
    if (!answer.some((message) => message.content.includes(expected)))
      problems.push(`${decision}d ${tool} ${callId}: no answer says ${expected}: ${JSON.stringify(answer)}`);
    if (decision === 'approve' && (starts.length !== 1 || starts[0]?.proc !== decider.proc + 1))
      problems.push(`approved ${callId} ran ${starts.length} times (${JSON.stringify(starts)})`);
    if (decision === 'reject' && starts.length !== 0)
      problems.push(`rejected ${callId} ran ${starts.length} times`);
  }
  return problems;
}

/** TROUPE_CRASH_ONLY=<text> runs only the trials whose name contains it (to replay one while debugging). */
const only = process.env.TROUPE_CRASH_ONLY;

async function runAll(all: readonly Trial[], groupCommit: GroupCommit): Promise<TrialReport[]> {
  const trials = only ? all.filter((trial) => trial.name.includes(only)) : all;
  const reports: TrialReport[] = new Array(trials.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < trials.length; index = next++)
      reports[index] = await runTrial(trials[index] as Trial, groupCommit);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return reports;
}

/** Where a first process can die, and how many such points the whole scenario reaches. */
const killPoints: readonly [KillKind, number][] = [
  ['model-in', 18],
  ['model-end', 30],
  ['model-after', 30],
  ['tool-in', 15],
  ['tool-end', 27],
  ['tool-after', 27],
  ['nested-model-in', 12],
  ['nested-tool-in', 12],
  ['approval-seen', 4],
  ['approval-decided', 4],
  ['turn-end', 6],
  ['send', 6],
  ['turn-stored', 6],
];

/** Points a recovering process reaches soon after it starts: the double crashes. */
const earlyPoints: readonly KillKind[] = ['model-in', 'model-end', 'tool-in', 'tool-end', 'nested-tool-in'];

function planMatrix(random: () => number): Trial[] {
  const pick = (max: number) => 1 + Math.floor(random() * max);
  const trials: Trial[] = [{ name: 'no crash', steps: [{ mode: 'run' }] }];
  for (const [kind, max] of killPoints) {
    // Three points per kind, spread over its range (first, middle, last third).
    for (let third = 0; third < 3; third++) {
      const span = Math.floor(max / 3);
      const count = span === 0 ? (third % max) + 1 : third * span + pick(span);
      trials.push({
        name: `${kind}:${count}`,
        steps: [{ mode: 'run', kill: { kind, count } }, { mode: 'run' }],
      });
    }
  }
  for (let index = 0; index < 8; index++) {
    const afterMs = Math.floor(random() * 450);
    trials.push({
      name: `parent kill after ${afterMs} ms`,
      steps: [{ mode: 'run', killAfterMs: afterMs }, { mode: 'run' }],
    });
  }
  // Approvals decided by a process running beside the sessions' own (they pick decisions up from the store): every
  // call, nested agents' included, without a crash; with crashes, the top agents' calls.
  trials.push({ name: 'approver beside for every call', steps: [{ mode: 'run', approver: 'other-all' }] });
  for (const kind of ['model-in', 'tool-end', 'nested-tool-in'] as const) {
    const count = pick((killPoints.find(([candidate]) => candidate === kind)?.[1] ?? 3) as number);
    trials.push({
      name: `approver beside, ${kind}:${count}`,
      steps: [
        { mode: 'run', approver: 'other', kill: { kind, count } },
        { mode: 'run', approver: 'other' },
      ],
    });
  }
  for (let index = 0; index < 8; index++) {
    const [kind, max] = killPoints[Math.floor(random() * killPoints.length)] as [KillKind, number];
    const first: Step = { mode: 'run', kill: { kind, count: pick(max) } };
    const second: Step =
      index % 2 === 0
        ? {
            mode: 'run',
            kill: {
              kind: earlyPoints[Math.floor(random() * earlyPoints.length)] as KillKind,
              count: pick(3),
            },
          }
        : { mode: 'run', killAfterMs: Math.floor(random() * 250) };
    const name = `double: ${first.kill?.kind}:${first.kill?.count}, then ${second.mode === 'run' && second.kill ? `${second.kill.kind}:${second.kill.count}` : `parent kill after ${second.mode === 'run' ? second.killAfterMs : 0} ms`}`;
    trials.push({ name, steps: [first, second, { mode: 'run' }] });
  }
  return trials;
}

/** The counts a matrix run tallies, all zero (the kill kinds are tallied across runs). */
const noCounts = () => ({
  trials: 0,
  kills: 0,
  effects: 0,
  completedReRuns: 0,
  inFlightReRuns: 0,
  lostTurns: 0,
});

const totals = {
  ...noCounts(),
  killKinds: new Map<string, number>(),
};

function tally(reports: readonly TrialReport[]): void {
  for (const report of reports) {
    totals.trials++;
    totals.kills += report.figures.kills;
    totals.effects += report.figures.effectsRun;
    totals.completedReRuns += report.figures.completedReRuns;
    totals.inFlightReRuns += report.figures.inFlightReRuns;
    totals.lostTurns += report.figures.lostTurns;
    for (const point of report.figures.killedAt) {
      const kind = point.slice(0, point.indexOf(':'));
      totals.killKinds.set(kind, (totals.killKinds.get(kind) ?? 0) + 1);
    }
    if (process.env.TROUPE_CRASH_VERBOSE)
      console.log(`${report.name}: ${JSON.stringify(report.figures)} ${report.problems.length} problems`);
  }
}

function failuresOf(reports: readonly TrialReport[]): string[] {
  return reports.flatMap((report) =>
    report.problems.map((problem) => `[${report.name}, TROUPE_CRASH_SEED=${seed}] ${problem}`),
  );
}

/**
 * Every trial runs on a store with one transaction per commit, and again with group commit, written on the event
 * loop and on the store's writer thread.
 */
const storeModes: { name: string; groupCommit: GroupCommit }[] = [
  { name: 'one transaction per commit', groupCommit: false },
  { name: 'group commit', groupCommit: true },
  { name: "group commit on the store's thread", groupCommit: 'thread' },
];

describe.each(storeModes)(
  'crash matrix ($name): durable sessions killed with SIGKILL and recovered by another process',
  ({ groupCommit }) => {
    afterAll(() => {
      const kinds = [...totals.killKinds].map(([kind, count]) => `${kind} ${count}`).join(', ');
      console.log(
        `crash matrix, ${storeModes.find((mode) => mode.groupCommit === groupCommit)?.name} (TROUPE_CRASH_SEED=${seed}): ${totals.trials} trials, ${totals.kills} kills ` +
          `(${kinds}, the rest by the parent at random times), ${totals.effects} effects run, ` +
          `${totals.completedReRuns} re-runs of completed effects, ${totals.inFlightReRuns} in-flight re-runs, ` +
          `${totals.lostTurns} lost turns`,
      );
      Object.assign(totals, noCounts());
      totals.killKinds.clear();
    });

    it('loses no turn, runs no committed call again and the interrupted call once, at every kill point', async () => {
      const reports = await runAll(planMatrix(seeded(seed)), groupCommit);
      tally(reports);
      expect(failuresOf(reports)).toEqual([]);
      // The matrix really killed and really re-ran: it is not passing on trials that never crashed.
      if (!only) {
        expect(reports.reduce((sum, report) => sum + report.figures.kills, 0)).toBeGreaterThanOrEqual(50);
        expect(reports.reduce((sum, report) => sum + report.figures.inFlightReRuns, 0)).toBeGreaterThan(20);
        expect(reports.reduce((sum, report) => sum + report.decidedBeside, 0)).toBeGreaterThan(0);
        // Two refunds and two nested confirms, all decided in the other process and picked up by polling.
        expect(
          reports.find((report) => report.name === 'approver beside for every call')?.decidedBeside,
        ).toBe(4);
      }
    }, 600_000);

    const approvalTrials = (where: 'top' | 'nested', watchdogMs?: number): Trial[] =>
      (['approve', 'reject'] as const).map((decision) => ({
        name: `approval of ${where === 'top' ? 'refund' : "the nested agent's confirm"}: ${decision} by another process`,
        steps: [
          { mode: 'run', kill: { kind: `approval-seen-${where}`, count: 1 } },
          { mode: 'decide', decision },
          { mode: 'run', ...(watchdogMs ? { watchdogMs } : {}) },
        ],
      }));

    it('applies a decision another process stored while the session was down: approved runs once, rejected never', async () => {
      const reports = await runAll(approvalTrials('top'), groupCommit);
      tally(reports);
      expect(failuresOf(reports)).toEqual([]);
    }, 180_000);

    /*
     * A nested agent (agentTool) that waits for an approval when the process dies resumes straight into its approval
     * wait; a decision another process stored meanwhile must reach it (the session hands stored decisions to nested
     * agents that wait, not only to the agent holding the conversation).
     */
    it("applies a decision another process stored on a nested agent's call while the session was down", async () => {
      // The recovery hangs while the bug stands: give up after 5 s (the whole scenario takes well under one).
      const reports = await runAll(approvalTrials('nested', 5_000), groupCommit);
      expect(failuresOf(reports)).toEqual([]);
    }, 180_000);

    /*
     * A nested agent's `approval_decided` event carries the nested route and depth, like its other events.
     */
    it("attributes a nested agent's approval_decided event to its route and depth", async () => {
      const reports = await runAll(
        [{ name: 'no crash, event attribution', steps: [{ mode: 'run' }] }],
        groupCommit,
      );
      expect(failuresOf(reports)).toEqual([]);
      expect(reports.flatMap((report) => report.misattributed)).toEqual([]);
    }, 180_000);
  },
);
