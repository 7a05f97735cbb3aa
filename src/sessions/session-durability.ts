import {
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalRequest,
  statusOfDecision,
  withdrawnRecord,
} from '../core/approvals.ts';
import type { Clock } from '../core/clock.ts';
import type { JsonValue } from '../core/json.ts';
import type { RunInput } from '../core/messages.ts';
import type { AgentCheckpoint, AgentContext, AgentEvent, ToolOutcome } from '../machines/agent.ts';
import type { SessionContext } from '../machines/session.ts';
import type {
  CommitBatch,
  MaybePromise,
  SessionStore,
  StoredSession,
  StoredSessionStatus,
} from '../persistence/store.ts';
import type { StoredAgentCheckpoint } from '../persistence/stored-format/stored-checkpoint.ts';
import type { DurableRun } from '../run/durable-run.ts';
import { phaseOfCommand, resumableCheckpoint, storedCheckpointOf, storedRestoreOf } from './checkpoints.ts';
import { mergedCommit } from './merged-commit.ts';
import type { SessionLog } from './session-log.ts';

/** The shortest time between two events-only commits of a session: a streaming session commits its deltas in batches. */
const minFlushIntervalMs = 5;

/** The batch of a relaxed flush: the pending events and results, nothing else. */
const relaxedFlush: CommitBatch = Object.freeze({ relaxed: true });

/** Where an agent of the session runs, for its checkpoints and journal keys. */
export interface RunPlace {
  /** `name` for the agent holding the conversation, `parent>callId/name` for a nested one. */
  route: string;
  /** True for an agent used as a tool (its checkpoints go to the nested-run table). */
  nested: boolean;
}

/**
 * A session's write-ahead persistence: every commit of the session goes through here, in order, with the events
 * emitted since the last one. It keeps an in-memory copy of what it committed (the session row, nested-run
 * checkpoints, the journal, approvals), so a supervised restart resumes without reading the store back.
 */
export class SessionDurability {
  readonly #store: SessionStore;
  readonly #sessionId: string;
  readonly #clock: Clock;
  readonly #log: SessionLog;
  /** The session row as last committed. */
  #row: StoredSession;
  /**
   * The row of the last commit made, stored or still in flight: the next row is built on it. With a store that
   * answers later, a row built on the last stored one would drop what a commit in flight changes (a queued message).
   */
  #latestRow: StoredSession;
  readonly #runs: Map<string, StoredAgentCheckpoint>;
  readonly #journal: Map<string, JsonValue>;
  readonly #approvals: Map<string, ApprovalRecord>;
  /** The session machine's context now (for checkpoints of the agent holding the conversation). */
  readonly #session: () => SessionContext;
  /** The input of the turn in progress, and the seq of its run_start. */
  #turnInput: RunInput;
  #firstSeq: number;
  /** The last commit in flight on an asynchronous store (it may reject): the next one waits for it to settle. */
  #inFlight: Promise<void> | undefined;
  /**
   * Finished calls' results not yet in the store. They ride with the next commit (the checkpoint that follows them,
   * mostly), or go in a relaxed commit of their own on the next turn of the event loop; either way they are in the
   * store before the next effect starts, and on the disk once the checkpoint before it is.
   */
  #pendingJournal: [string, JsonValue][] = [];
  #flushScheduled = false;
  #closed = false;
  /** Commits asked for while the session gathers them (see gather()), merged into one batch. */
  #gathering = false;
  #gathered: GatheredCommit | undefined;
  /** The outcome of a gathered commit made before release() (see #commitGathered), for release() to hand on. */
  #releasedEarly:
    | { failed: false; result: MaybePromise<void> }
    | { failed: true; error: unknown }
    | undefined;
  readonly #onFlushError: (error: unknown) => void;

  constructor(options: {
    store: SessionStore;
    sessionId: string;
    clock: Clock;
    log: SessionLog;
    row: StoredSession;
    runs: Map<string, StoredAgentCheckpoint>;
    journal: Map<string, JsonValue>;
    approvals: readonly ApprovalRecord[];
    session: () => SessionContext;
    turnInput: RunInput;
    firstSeq: number;
    onFlushError: (error: unknown) => void;
  }) {
    this.#store = options.store;
    this.#sessionId = options.sessionId;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#row = options.row;
    this.#latestRow = options.row;
    this.#runs = options.runs;
    this.#journal = options.journal;
    this.#approvals = new Map(options.approvals.map((record) => [record.callId, record]));
    this.#session = options.session;
    this.#turnInput = options.turnInput;
    this.#firstSeq = options.firstSeq;
    this.#onFlushError = options.onFlushError;
  }

  get row(): StoredSession {
    return this.#row;
  }

  /** Commits a batch after every earlier one, with the events emitted so far. Throws / rejects if the store does. */
  commit(batch: CommitBatch): MaybePromise<void> {
    if (this.#closed) return;
    if (batch.session) this.#latestRow = batch.session;
    if (this.#gathering) return this.#gather(batch);
    return this.#inOrder(batch);
  }

  /** Hands a batch to the store after every earlier one, failed or not. */
  #inOrder(batch: CommitBatch): MaybePromise<void> {
    const before = this.#inFlight;
    if (before) {
      // After the commit before it, failed or not.
      const run = (): MaybePromise<void> => this.#commitNow(batch);
      const next = before.then(run, run);
      this.#inFlight = next;
      const settled = (): void => {
        if (this.#inFlight === next) this.#inFlight = undefined;
      };
      next.then(settled, settled);
      return next;
    }
    const result = this.#commitNow(batch);
    // The commit's own promise: it stops being in flight when it settles (see #commitNow).
    if (result instanceof Promise) this.#inFlight = result;
    return result;
  }

  /**
   * From now until release(), commits are gathered into one batch instead of going to the store: the commits asked
   * for in one synchronous run (a turn's start and the agent's first checkpoint) cost one commit. Whoever asked for
   * one gets a promise that settles with the merged commit, so nothing it decided starts before that is committed.
   */
  gather(): void {
    this.#gathering = true;
  }

  /**
   * Commits what was gathered, as one atomic batch, and commits as usual from then on. Throws or rejects as the
   * store does (the gathered commits' promises reject with the same error); nothing to commit returns at once.
   */
  release(): MaybePromise<void> {
    const early = this.#releasedEarly;
    if (early !== undefined) {
      this.#releasedEarly = undefined;
      if (early.failed) throw early.error;
      return early.result;
    }
    this.#gathering = false;
    const gathered = this.#gathered;
    this.#gathered = undefined;
    if (gathered === undefined) return;
    let result: MaybePromise<void>;
    try {
      // Even when the session closed meanwhile: what was gathered includes its last commit.
      result = this.#inOrder(gathered.batch);
    } catch (error) {
      gathered.reject(error);
      throw error;
    }
    if (result instanceof Promise) result.then(gathered.resolve, gathered.reject);
    else gathered.resolve();
    return result;
  }

  /**
   * What gather() holds back, committed now, for a step that commits nothing of its own (a guardrail check) but
   * must not start before the turn it belongs to is. The later release() hands on the same outcome (a synchronous
   * failure is thrown there, where the session's start hears of it; here it is a rejection).
   */
  #commitGathered(): MaybePromise<void> {
    if (!this.#gathering) return;
    try {
      const result = this.release();
      this.#releasedEarly = { failed: false, result };
      return result;
    } catch (error) {
      this.#releasedEarly = { failed: true, error };
      return Promise.reject(error);
    }
  }

  #gather(batch: CommitBatch): Promise<void> {
    const gathered = this.#gathered;
    if (gathered === undefined) {
      const first = new GatheredCommit(batch);
      this.#gathered = first;
      return first.promise;
    }
    gathered.batch = mergedCommit(gathered.batch, batch);
    return gathered.promise;
  }

  #commitNow(batch: CommitBatch): MaybePromise<void> {
    // A relaxed flush whose events and results went with an earlier commit has nothing left to write.
    if (batch === relaxedFlush && !this.#log.hasPending && this.#pendingJournal.length === 0) return;
    const events = this.#log.takePending();
    // A turn that ends clears its journal: results still waiting belong to it and need not be written.
    const journal = this.#pendingJournal;
    this.#pendingJournal = [];
    let full: CommitBatch = events.length > 0 ? { ...batch, events } : batch;
    if (journal.length > 0 && batch.clearTurn !== true) {
      full = { ...full, journal: [...journal, ...(batch.journal ?? [])] };
    }
    const restore = () => {
      this.#log.failed(events);
      if (batch.clearTurn !== true) this.#pendingJournal = [...journal, ...this.#pendingJournal];
    };
    let result: MaybePromise<void>;
    try {
      result = this.#store.commit(this.#sessionId, full);
    } catch (error) {
      restore();
      throw error;
    }
    if (result instanceof Promise) {
      const done: Promise<void> = result.then(
        () => {
          if (this.#inFlight === done) this.#inFlight = undefined;
          this.#applied(full, events);
        },
        (error: unknown) => {
          if (this.#inFlight === done) this.#inFlight = undefined;
          restore();
          throw error;
        },
      );
      return done;
    }
    this.#applied(full, events);
  }

  /** What a commit changed, mirrored in memory once the store has it. */
  #applied(batch: CommitBatch, events: readonly import('../core/events.ts').RunEvent[]): void {
    if (batch.session) this.#row = batch.session;
    if (batch.clearTurn) {
      this.#runs.clear();
      this.#journal.clear();
    }
    for (const [route, checkpoint] of batch.runs ?? []) {
      if (checkpoint === null) this.#runs.delete(route);
      else this.#runs.set(route, checkpoint);
    }
    for (const [key, value] of batch.journal ?? []) this.#journal.set(key, value);
    for (const record of batch.approvals ?? []) this.#approvals.set(record.callId, record);
    if (events.length > 0) this.#log.committed(events);
  }

  /**
   * Events were emitted: commit them soon (they reach readers once committed). Events emitted in one turn of the
   * event loop go in one commit, and a session that streams commits at most every few milliseconds; a commit that
   * decides an effect takes the pending events with it anyway. Events-only commits are relaxed (no fsync).
   */
  scheduleFlush(): void {
    if (this.#flushScheduled || this.#closed) return;
    this.#flushScheduled = true;
    const wait = this.#lastFlush + minFlushIntervalMs - performance.now();
    this.#flushTimer = wait > 0 ? setTimeout(this.#flush, wait) : setImmediate(this.#flush);
  }

  #lastFlush = Number.NEGATIVE_INFINITY;
  #flushTimer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | undefined;

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    this.#flushTimer = undefined;
    if ((!this.#log.hasPending && this.#pendingJournal.length === 0) || this.#closed) return;
    this.#lastFlush = performance.now();
    try {
      const result = this.commit(relaxedFlush);
      if (result instanceof Promise) result.catch(this.#onFlushError);
    } catch (error) {
      this.#onFlushError(error);
    }
  };

  /** Commits what is pending and stops committing (the session has closed or was suspended). */
  close(final?: CommitBatch): MaybePromise<void> {
    const result =
      final || this.#log.hasPending || this.#pendingJournal.length > 0 ? this.commit(final ?? {}) : undefined;
    this.#closed = true;
    // The pending events went with this commit: no flush is left waiting (and no timer holds the process).
    if (this.#flushTimer !== undefined) {
      clearTimeout(this.#flushTimer as ReturnType<typeof setTimeout>);
      clearImmediate(this.#flushTimer as ReturnType<typeof setImmediate>);
      this.#flushTimer = undefined;
    }
    return result;
  }

  /** A new row with `changes`: the row is replaced whole by every commit that carries it. */
  rowWith(changes: Partial<StoredSession>): StoredSession {
    return { ...this.#latestRow, ...changes, updatedAt: this.#clock.now() };
  }

  /** The status the row should have while the turn runs: awaiting when people have calls to decide. */
  #runningStatus(): StoredSessionStatus {
    for (const record of this.#approvals.values()) if (record.status === 'pending') return 'awaiting';
    return 'running';
  }

  /** A turn starts: the row says so before the agent does anything (a crash now loses no turn). */
  turnStarted(input: RunInput, queued: readonly RunInput[], firstSeq: number): MaybePromise<void> {
    this.#turnInput = input;
    this.#firstSeq = firstSeq;
    const context = this.#session();
    return this.commit({
      session: this.rowWith({
        status: 'running',
        agent: context.current,
        turns: context.turns,
        queued: [...queued],
        turn: { number: context.turns + 1, input, firstSeq, session: storedRestoreOf(context), agent: null },
      }),
    });
  }

  /** Messages sent while a turn runs are kept until their turn starts. */
  queuedChanged(queued: readonly RunInput[]): MaybePromise<void> {
    return this.commit({ session: this.rowWith({ queued: [...queued] }) });
  }

  /** The session's waiting requests, withdrawn with `reason` (nothing committed: the caller commits them). */
  withdrawPending(reason: string): ApprovalRecord[] {
    const at = this.#clock.now();
    return this.pendingApprovals().map((record) => withdrawnRecord(record, reason, at));
  }

  /**
   * A turn ended: the conversation, the status, nothing left of the turn to resume. With `next` (a message sent
   * while the turn ran), the next turn starts in the same commit, so a crash in between loses neither. `withdrawn`:
   * the turn's requests nobody waits for any more (see withdrawPending()), committed with it.
   */
  turnEnded(
    context: SessionContext,
    status: StoredSessionStatus,
    next?: { input: RunInput; queued: readonly RunInput[]; firstSeq: number },
    withdrawn: readonly ApprovalRecord[] = [],
  ): MaybePromise<void> {
    if (next) {
      this.#turnInput = next.input;
      this.#firstSeq = next.firstSeq;
    }
    const batch: CommitBatch = {
      session: this.rowWith({
        status: next ? 'running' : status,
        agent: context.current,
        turns: context.turns,
        transcript: context.transcript,
        queued: next ? [...next.queued] : [],
        turn: next
          ? {
              number: context.turns + 1,
              input: next.input,
              firstSeq: next.firstSeq,
              session: storedRestoreOf(context),
              agent: null,
            }
          : null,
      }),
      clearTurn: true,
    };
    if (withdrawn.length > 0) batch.approvals = [...withdrawn];
    return this.commit(batch);
  }

  /** The row's status changes (suspended, closed, failed), the turn in progress kept. */
  statusChanged(status: StoredSessionStatus): MaybePromise<void> {
    return this.commit({ session: this.rowWith({ status }) });
  }

  /** Approvals of the session that wait for a decision. */
  pendingApprovals(): ApprovalRecord[] {
    return [...this.#approvals.values()].filter((record) => record.status === 'pending');
  }

  approval(callId: string): ApprovalRecord | undefined {
    return this.#approvals.get(callId);
  }

  /** Records a person's decision (before the agent hears of it). */
  decide(callId: string, decision: ApprovalDecision): MaybePromise<void> {
    const record = this.#approvals.get(callId);
    if (!record) return;
    return this.commit({
      approvals: [{ ...record, status: statusOfDecision(decision), decision, decidedAt: this.#clock.now() }],
    });
  }

  /** Applies a decision another process committed to the store. */
  adopt(record: ApprovalRecord): void {
    this.#approvals.set(record.callId, record);
  }

  /**
   * A supervised restart of `name`: model answers recorded after its checkpoint are not replayed to the restarted
   * agent (the answer it was handling when it failed would make it fail again); the model is asked again. Tool
   * outcomes stay recorded: those calls are not run again.
   */
  forgetAnswersAfterCheckpoint(name: string, segment: number): MaybePromise<void> {
    const context = this.#session();
    const prefix = `${context.turns + 1}|${name}#${segment}|m`;
    const made = this.topCheckpoint(name, segment)?.modelCalls ?? 0;
    const forget: [string, JsonValue][] = [];
    for (const [key, value] of this.#journal) {
      if (value === null || !key.startsWith(prefix)) continue;
      if (Number(key.slice(prefix.length)) > made) forget.push([key, null]);
    }
    if (forget.length === 0) return;
    return this.commit({ journal: forget });
  }

  /** The checkpoint of a nested run, if it had one before a restart. */
  nestedCheckpoint(route: string): AgentCheckpoint | undefined {
    const stored = this.#runs.get(route);
    return stored && resumableCheckpoint(stored);
  }

  /** The checkpoint of the agent holding the conversation, for `name` in `segment`, if there is one. */
  topCheckpoint(name: string, segment: number): AgentCheckpoint | undefined {
    const agent = this.#row.turn?.agent;
    return agent && agent.name === name && agent.segment === segment
      ? resumableCheckpoint(agent.checkpoint)
      : undefined;
  }

  /** The write-ahead hooks of one agent run in the session. */
  runFor(place: RunPlace): DurableRun {
    const keyOf = (suffix: string) => {
      const context = this.#session();
      const run = place.nested ? place.route : `${place.route}#${context.segment}`;
      return `${context.turns + 1}|${run}|${suffix}`;
    };
    const checkpoint = (context: AgentContext, phase: AgentCheckpoint['phase'], extra?: CommitBatch) => {
      const agentCheckpoint = storedCheckpointOf(context, phase);
      if (place.nested) return this.commit({ ...extra, runs: [[place.route, agentCheckpoint]] });
      const session = this.#session();
      return this.commit({
        ...extra,
        session: this.rowWith({
          status: extra?.approvals ? 'awaiting' : this.#runningStatus(),
          agent: session.current,
          turn: {
            number: session.turns + 1,
            input: this.#turnInput,
            firstSeq: this.#firstSeq,
            session: storedRestoreOf(session),
            agent: { name: session.current, segment: session.segment, checkpoint: agentCheckpoint },
          },
        }),
      });
    };
    return {
      beforeEffect: (command, context) => checkpoint(context, phaseOfCommand(command)),
      commitPending: () => this.#commitGathered(),
      isRequested: (callId) => this.#approvals.has(callId),
      awaitPeople: (requests: readonly ApprovalRequest[], context) => {
        const records: ApprovalRecord[] = requests.map((request) => ({ ...request, status: 'pending' }));
        return checkpoint(
          context,
          'toolUse',
          records.length > 0 ? { approvals: records } : { approvals: [] },
        );
      },
      // A null entry is an answer a restart chose not to replay.
      replayModel: (call) => (this.#journal.get(keyOf(`m${call}`)) ?? undefined) as AgentEvent | undefined,
      recordModel: (call, event) => this.#journalSoon(keyOf(`m${call}`), event as unknown as JsonValue),
      replayTool: (step, callId) =>
        (this.#journal.get(keyOf(`t${step}|${callId}`)) ?? undefined) as ToolOutcome | undefined,
      // An outcome while other calls of the batch still run is committed at once: nothing else follows it soon.
      recordTool: (step, callId, outcome, last) => {
        const entry: [string, JsonValue] = [keyOf(`t${step}|${callId}`), outcome as unknown as JsonValue];
        if (last) this.#journalSoon(entry[0], entry[1]);
        else return this.commit({ journal: [entry] });
      },
      replayToolEffect: (key) => this.#journal.get(keyOf(`e${key}`)) ?? undefined,
      recordToolEffect: (key, value) => this.commit({ journal: [[keyOf(`e${key}`), value]] }),
    };
  }

  /**
   * A finished call's result: kept for replay at once, and written with the next commit of the session (the
   * checkpoint before the next effect, which the result decided), so a tool step costs one commit, not two. If no
   * commit follows in this turn of the event loop, a relaxed one of its own takes it: it survives a crash of the
   * process, and the checkpoint before the next effect takes it to the disk.
   */
  #journalSoon(key: string, value: JsonValue): void {
    if (this.#closed) return;
    this.#journal.set(key, value);
    this.#pendingJournal.push([key, value]);
    if (this.#pendingJournal.length === 1) setImmediate(this.#flushJournal);
  }

  readonly #flushJournal = (): void => {
    if (this.#pendingJournal.length === 0 || this.#closed) return;
    try {
      const result = this.commit(relaxedFlush);
      if (result instanceof Promise) result.catch(this.#onFlushError);
    } catch (error) {
      this.#onFlushError(error);
    }
  };
}

/** The commits gathered while a session starts: one batch, and one promise for all who asked. */
class GatheredCommit {
  batch: CommitBatch;
  readonly promise: Promise<void>;
  resolve: () => void = () => undefined;
  reject: (error: unknown) => void = () => undefined;

  constructor(batch: CommitBatch) {
    this.batch = batch;
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Its failure is the caller of release()'s to report; those who wait on it hear it too, none is left unhandled.
    this.promise.catch(() => undefined);
  }
}

/**
 * Runs `then` once a commit (synchronous or not) is done. A failed commit is handed to `onError` and `then` runs
 * anyway: what follows (a result, a close) must not wait forever on a store that failed.
 */
export function afterCommit(
  commit: () => MaybePromise<void>,
  then: () => void,
  onError: (error: unknown) => void,
): void {
  let result: MaybePromise<void>;
  try {
    result = commit();
  } catch (error) {
    onError(error);
    then();
    return;
  }
  if (result instanceof Promise)
    result.then(then, (error: unknown) => {
      onError(error);
      then();
    });
  else then();
}

/** A commit as a promise: resolves once committed, rejects with the store's error. */
export function committed(commit: () => MaybePromise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let result: MaybePromise<void>;
    try {
      result = commit();
    } catch (error) {
      reject(error);
      return;
    }
    if (result instanceof Promise) result.then(resolve, reject);
    else resolve();
  });
}
