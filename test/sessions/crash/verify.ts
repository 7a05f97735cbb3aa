/**
 * What the crash matrix checks, from outside the processes: the effect log (what really ran) and the SQLite file
 * (what was committed), read by the parent after each process ended.
 *
 * The rule for "committed": an effect's result is committed once the store holds it, read after the process died.
 * Each result carries its effect's marker (`[m:<request hash>]` for a model call, `[t:<call id>]` for a tool call),
 * so an effect is committed when its marker appears in what the store holds for the session (the transcript, the
 * turn's checkpoints, nested runs and journal), or when the turn it belongs to has ended in the store (a turn's end
 * commits its transcript and drops the turn's journal). An effect whose end line was logged but whose result the
 * store does not hold was in flight: killed between returning and the commit, it may legitimately run again.
 *
 * The checks, per trial:
 * - write-ahead: every effect in flight when a process died was decided by a checkpoint the store holds (a model
 *   call's request is the history of a committed checkpoint; a tool call is in a committed checkpoint's history);
 * - killed right after a call returned, its result is in the store; killed inside it, it is not;
 * - an effect committed when a process died never starts again; one in flight starts again in the next process
 *   that gets that far, once, with the same idempotency key; within a process nothing starts twice;
 * - every tool call's idempotency key is `${sessionId}:${turn}:${step}:${callPath}`;
 * - in the end, every input sent (queued ones included) is one turn of the transcript, in order, ending with its
 *   answer; the history is valid; the event log has no gap and starts and ends each turn once; nothing of a turn
 *   (checkpoints, journal, queued inputs, pending calls) is left.
 */

import type { RunEvent } from '../../../src/core/events.ts';
import { validateHistory } from '../../../src/core/history.ts';
import type { Message } from '../../../src/core/messages.ts';
import { createSqliteStore } from '../../../src/persistence/sqlite-store.ts';
import type { LogLine } from './effect-log.ts';
import { expectedAnswer, modelKey, modelMarker, sessionsScript, toolMarker } from './scenario.ts';

type EffectLine = Extract<LogLine, { type: 'effect' }>;

/** What the store held for one session when a process had died. */
export interface SessionSnapshot {
  turnsDone: number;
  /** The session's transcript, turn, nested runs and journal as JSON: where markers are looked for. */
  held: string;
  /** Model keys of the committed checkpoints (the agent holding the conversation and every nested run). */
  checkpointKeys: Set<string>;
  /** Tool call ids the committed checkpoints decided (assistant tool calls in their histories). */
  decidedCalls: Set<string>;
  status: string;
  pendingApprovals: string[];
}

export type StoreSnapshot = Map<string, SessionSnapshot>;

function callIds(history: readonly Message[]): string[] {
  return history.flatMap((message) =>
    message.role === 'assistant' ? (message.toolCalls ?? []).map((call) => call.id) : [],
  );
}

/** Reads the store the way a restarting process would (opening it replays SQLite's write-ahead log). */
export function snapshotStore(file: string): StoreSnapshot {
  const store = createSqliteStore(file, { synchronous: 'normal' });
  try {
    const snapshot: StoreSnapshot = new Map();
    for (const id of sessionsScript.keys()) {
      const state = store.load(id);
      if (!state) continue;
      const checkpointKeys = new Set<string>();
      const decidedCalls = new Set<string>();
      const top = state.session.turn?.agent;
      if (top) {
        checkpointKeys.add(modelKey(top.name, top.checkpoint.history));
        for (const callId of callIds(top.checkpoint.history)) decidedCalls.add(callId);
      }
      for (const [route, checkpoint] of state.runs) {
        const agent = route.slice(route.lastIndexOf('/') + 1);
        checkpointKeys.add(modelKey(agent, checkpoint.history));
        for (const callId of callIds(checkpoint.history)) decidedCalls.add(callId);
      }
      snapshot.set(id, {
        turnsDone: state.session.turns,
        held: JSON.stringify([
          state.session.transcript,
          state.session.turn,
          [...state.runs],
          [...state.journal],
        ]),
        checkpointKeys,
        decidedCalls,
        status: state.session.status,
        pendingApprovals: state.approvals
          .filter((record) => record.status === 'pending')
          .map((record) => record.callId),
      });
    }
    return snapshot;
  } finally {
    store.close();
  }
}

/** One process of a trial, as the parent saw it. */
export interface ProcessOutcome {
  proc: number;
  mode: 'run' | 'decide';
  killed: boolean;
  /** The store after the process ended (read before the next one started). */
  after: StoreSnapshot;
}

/** What the store holds for a session once the last process has finished. */
export interface FinalSession {
  status: string;
  turns: number;
  transcript: Message[];
  /** The session's whole event log. */
  events: RunEvent[];
  /** What a finished session should no longer hold (a turn, queued inputs, checkpoints, journal, pending calls). */
  leftovers: string[];
}

export interface TrialFigures {
  effectsRun: number;
  kills: number;
  completedReRuns: number;
  inFlightReRuns: number;
  lostTurns: number;
  /** The kill points the processes killed themselves at (`kind:count`). */
  killedAt: string[];
}

/** Identity of an effect across processes. */
const idOf = (line: EffectLine) => `${line.kind}|${line.session}|${line.key}`;

function committed(line: EffectLine, snapshot: StoreSnapshot): boolean {
  const session = snapshot.get(line.session);
  if (!session) return false;
  if (line.turn <= session.turnsDone) return true;
  return session.held.includes(line.kind === 'model' ? modelMarker(line.key) : toolMarker(line.key));
}

/** `${sessionId}:${turn}:${step}:${callPath}`, the call path being the ids of the calls that started nested runs. */
function expectedIdempotencyKey(line: EffectLine): string {
  const outer = [...(line.route ?? '').matchAll(/>([^/>]+)\//g)].map((match) => match[1]);
  return `${line.session}:${line.turn}:${line.step}:${[...outer, line.key].join('/')}`;
}

/**
 * Checks a finished trial: returns its problems (empty when every promise held) and its figures.
 * `finalTranscripts` is what the store held once the last process had finished.
 */
export function verifyTrial(
  log: readonly LogLine[],
  processes: readonly ProcessOutcome[],
  finalTranscripts: ReadonlyMap<string, FinalSession>,
  options: { groupCommit?: boolean | 'thread' } = {},
): { problems: string[]; figures: TrialFigures } {
  const problems: string[] = [];
  const figures: TrialFigures = {
    effectsRun: 0,
    kills: 0,
    completedReRuns: 0,
    inFlightReRuns: 0,
    lostTurns: 0,
    killedAt: [],
  };
  const effects = log.filter((line): line is EffectLine => line.type === 'effect');
  const startsIn = (proc: number) => effects.filter((line) => line.proc === proc && line.phase === 'start');
  const firstStart = new Map<string, EffectLine>();
  for (const line of effects)
    if (line.phase === 'start' && !firstStart.has(idOf(line))) firstStart.set(idOf(line), line);
  figures.effectsRun = effects.filter((line) => line.phase === 'start').length;

  // Every start of a tool call carries the same, documented idempotency key.
  for (const line of effects) {
    if (line.kind !== 'tool' || line.phase !== 'start') continue;
    const expected = expectedIdempotencyKey(line);
    if (line.idempotencyKey !== expected)
      problems.push(
        `${line.key}: idempotency key ${line.idempotencyKey} in process ${line.proc}, expected ${expected}`,
      );
  }

  // Within one process an effect runs at most once (nothing here fails, so nothing is retried).
  for (const { proc } of processes) {
    const seen = new Set<string>();
    for (const line of startsIn(proc)) {
      if (seen.has(idOf(line))) problems.push(`${idOf(line)} started twice in process ${proc}`);
      seen.add(idOf(line));
    }
  }

  /** Effects in flight at the last death, owed a re-run by a later process. */
  let owed = new Map<string, EffectLine>();
  const completed = new Map<string, number>();
  for (const [index, outcome] of processes.entries()) {
    const { proc } = outcome;
    const starts = startsIn(proc);
    const startedHere = new Set(starts.map(idOf));
    // Results committed before an earlier process died are never produced again.
    for (const line of starts) {
      const at = completed.get(idOf(line));
      if (at !== undefined) {
        figures.completedReRuns++;
        problems.push(`${idOf(line)} was committed when process ${at} died but ran again in process ${proc}`);
      }
    }
    // The call that was in flight runs again, once, with the same key.
    for (const [id, original] of owed) {
      if (!startedHere.has(id)) continue;
      figures.inFlightReRuns++;
      owed.delete(id);
      const again = starts.find((line) => idOf(line) === id);
      if (again && again.idempotencyKey !== original.idempotencyKey)
        problems.push(`${id} re-ran with key ${again.idempotencyKey}, first ${original.idempotencyKey}`);
    }
    const isLast = index === processes.length - 1;
    if (!outcome.killed && outcome.mode === 'run') {
      for (const [id] of owed) problems.push(`${id} was in flight when a process died and never ran again`);
      owed = new Map();
      // A process that finished finished what it started.
      for (const line of starts)
        if (!effects.some((end) => end.proc === proc && end.phase === 'end' && idOf(end) === idOf(line)))
          problems.push(`${idOf(line)} started in process ${proc}, which finished, but never ended`);
    }
    if (outcome.killed) figures.kills++;
    const kill = log.find((line) => line.type === 'kill' && line.proc === proc);
    if (kill?.type === 'kill') {
      figures.killedAt.push(kill.point);
      // Killed inside a call, its result is not in the store; killed right after it returned (setImmediate), it
      // is: the SQLite store commits synchronously in the microtasks that follow the return, before the agent
      // goes on.
      const started =
        kill.effect && firstStart.get(`${kill.effect.kind}|${kill.effect.session}|${kill.effect.key}`);
      if (kill.effect && !started)
        problems.push(`process ${proc} was killed in ${kill.effect.key}, never started`);
      if (started) {
        const isCommitted = committed(started, outcome.after);
        const after = kill.point.includes('-after:');
        // With group commit the result's commit is made there too, but written when the event-loop turn ends: right
        // after the return it may not be on disk yet (nothing went on from it; the call re-runs in flight).
        const either = after && (options.groupCommit === true || options.groupCommit === 'thread');
        if (isCommitted !== after && !either)
          problems.push(
            `killed at ${kill.point} in ${idOf(started)}: its result is ${isCommitted ? '' : 'not '}in the store`,
          );
      }
    }
    if (outcome.killed && isLast)
      problems.push(`the last process (${proc}) was killed: the trial never finished`);
    const snapshot = outcome.after;
    for (const line of effects) {
      if (line.phase !== 'start' || line.proc > proc || completed.has(idOf(line))) continue;
      if (committed(line, snapshot)) {
        completed.set(idOf(line), proc);
        if (owed.has(idOf(line)))
          problems.push(
            `${idOf(line)} was in flight, then committed in process ${proc} without running again`,
          );
        owed.delete(idOf(line));
        continue;
      }
      if (!outcome.killed || (line.proc !== proc && !owed.has(idOf(line)))) continue;
      // Write-ahead: the checkpoint that decided an effect in flight is in the store.
      const session = snapshot.get(line.session);
      const decided =
        line.kind === 'model' ? session?.checkpointKeys.has(line.key) : session?.decidedCalls.has(line.key);
      if (!decided)
        problems.push(
          `${idOf(line)} was in flight when process ${proc} died, but no committed checkpoint decided it`,
        );
      if (!owed.has(idOf(line))) owed.set(idOf(line), firstStart.get(idOf(line)) ?? line);
    }
  }

  // No turn lost, none doubled; every history valid; every turn ends with its answer.
  for (const [id, inputs] of sessionsScript) {
    const final = finalTranscripts.get(id);
    const expected = inputs.map((input) => input.text);
    if (!final) {
      figures.lostTurns += expected.length;
      problems.push(`session ${id} is not in the store`);
      continue;
    }
    const users = final.transcript.flatMap((message) =>
      message.role === 'user' && typeof message.content === 'string' ? [message.content] : [],
    );
    for (const input of expected) {
      const times = users.filter((user) => user === input).length;
      if (times !== 1) {
        figures.lostTurns += times === 0 ? 1 : 0;
        problems.push(`session ${id}: input ${JSON.stringify(input)} has ${times} turns in the transcript`);
      }
    }
    if (JSON.stringify(users) !== JSON.stringify(expected))
      problems.push(`session ${id}: turns ${JSON.stringify(users)}, expected ${JSON.stringify(expected)}`);
    if (final.leftovers.length > 0)
      problems.push(`session ${id} finished but holds ${final.leftovers.join(', ')}`);
    if (final.turns !== expected.length || final.status !== 'idle')
      problems.push(`session ${id}: ${final.turns} turns, status ${final.status}`);
    try {
      validateHistory(final.transcript);
    } catch (error) {
      problems.push(`session ${id}: invalid history: ${String(error)}`);
    }
    // The event log a client reads with events({ after }): no gap, and each turn started and ended once, in order.
    final.events.forEach((event, index) => {
      if (event.seq !== index) problems.push(`session ${id}: event ${index} has seq ${event.seq}`);
    });
    const boundaries = final.events.flatMap((event) =>
      event.depth === 0 && (event.type === 'run_start' || event.type === 'run_end')
        ? [event.type === 'run_start' ? `start ${JSON.stringify(event.data.input)}` : 'end']
        : [],
    );
    const expectedBoundaries = expected.flatMap((input) => [`start ${JSON.stringify(input)}`, 'end']);
    if (JSON.stringify(boundaries) !== JSON.stringify(expectedBoundaries))
      problems.push(`session ${id}: turns in the event log ${JSON.stringify(boundaries)}`);
    const starts = final.transcript.flatMap((message, index) => (message.role === 'user' ? [index] : []));
    starts.forEach((start, turn) => {
      const end = starts[turn + 1] ?? final.transcript.length;
      const last = final.transcript[end - 1];
      const input = final.transcript[start]?.content;
      if (typeof input !== 'string') return;
      if (last?.role !== 'assistant' || !last.content.startsWith(expectedAnswer(input)))
        problems.push(`session ${id}: turn ${JSON.stringify(input)} ends with ${JSON.stringify(last)}`);
    });
  }
  return { problems, figures };
}
