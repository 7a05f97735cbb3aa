/**
 * The workload the durable-session benchmarks share: one agent whose scripted model asks for `steps` tool calls, one
 * at a time, then answers; a trivial tool; the stores they compare; and the small statistics they print.
 * The model's turn is a function of the tool results in the conversation it is sent, so one model object serves
 * any number of sessions at once.
 */
import { z } from 'zod';
import type { CommitBatch, ModelProvider, SessionStore } from '../../dist/index.js';
import * as built from '../../dist/index.js';

/** The parts of Troupe the workload uses: the build in dist/ by default, or another build (a baseline) to compare. */
export type WorkloadLibrary = Pick<
  typeof built,
  'createMemoryStore' | 'createSqliteStore' | 'defineAgent' | 'tool' | 'createAgentSystem'
>;

const { createSqliteStore } = built;

export const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };

/** The final text of a turn that saw `results` tool results (the bench checks it). */
export const answerAfter = (results: number): string => `done after ${results} tool results`;

export interface StepAgentOptions {
  /** Tool steps per turn (counted from the last user message, so later turns of a session do as many). */
  steps: number;
  /** How long each model call takes, in milliseconds (default 0: it answers at once). */
  modelDelayMs?: number;
  /** Characters of every tool result (default: a few, `ok 3`). */
  resultChars?: number;
  /** Text deltas of the final answer (0: one whole text, no delta events). */
  deltas?: number;
  /** How the model paces its deltas: 'macrotask' yields to the event loop before each one, as a network stream
   * does; 'sync' emits them all in one go. */
  deltaPacing?: 'macrotask' | 'sync';
  /** The tool never answers (its promise ends only with the run's abort signal): for interrupted sessions. */
  hang?: boolean;
  /** Called as each tool call starts (after its checkpoint is committed). */
  onExecute?: () => void;
  /** The tool answers once the promise this returns (if any) resolves. */
  gate?: () => Promise<void> | undefined;
  name?: string;
  /** The build to make the agent with (default: dist/). */
  lib?: WorkloadLibrary;
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export function stepModel(options: StepAgentOptions): ModelProvider {
  const { steps } = options;
  const deltas = options.deltas ?? 0;
  const pacing = options.deltaPacing ?? 'macrotask';
  const delayMs = options.modelDelayMs ?? 0;
  return {
    provider: 'bench',
    model: 'bench',
    async generate(request) {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      // Tool results since the last user message: this turn's steps.
      let results = 0;
      const messages = request.messages;
      for (let i = messages.length - 1; i >= 0; i--) {
        const role = messages[i]?.role;
        if (role === 'user') break;
        if (role === 'tool') results++;
      }
      if (results < steps)
        return {
          text: '',
          toolCalls: [{ id: `call_${results}`, name: 'step', args: { step: results } }],
          stopReason: 'tool_use',
          usage,
        };
      const text = answerAfter(results);
      const onDelta = request.onDelta;
      if (deltas > 0 && onDelta) {
        for (let i = 0; i < deltas; i++) {
          if (pacing === 'macrotask') await yieldToLoop();
          onDelta({ type: 'text', text: 'tok ' });
        }
        return { text: 'tok '.repeat(deltas), toolCalls: [], stopReason: 'end_turn', usage };
      }
      return { text, toolCalls: [], stopReason: 'end_turn', usage };
    },
  };
}

export function stepAgent(options: StepAgentOptions) {
  const filler = options.resultChars && options.resultChars > 8 ? 'x'.repeat(options.resultChars - 8) : '';
  const hang = options.hang === true;
  const onExecute = options.onExecute;
  const gate = options.gate;
  const { defineAgent, tool } = options.lib ?? built;
  return defineAgent({
    name: options.name ?? 'stepper',
    instructions: 'Call the step tool until the task is done, then answer.',
    model: stepModel(options),
    tools: [
      tool({
        name: 'step',
        description: 'Performs one step of the task.',
        input: z.object({ step: z.number() }),
        execute: ({ step }, context) => {
          onExecute?.();
          if (hang)
            return new Promise<string>((_, reject) =>
              context.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
            );
          const wait = gate?.();
          return wait ? wait.then(() => `ok ${step} ${filler}`) : `ok ${step} ${filler}`;
        },
      }),
    ],
    limits: { maxSteps: options.steps + 1, maxToolCallsPerTool: null },
  });
}

/**
 * The stores compared; `sqlite-group` is SQLite FULL with group commit (`createSqliteStore(path, { groupCommit: true })`),
 * `sqlite-group-thread` the same with the groups written by the store's writer thread (`groupCommit: { writer: 'thread' }`).
 */
export type StoreKind = 'memory' | 'sqlite-normal' | 'sqlite-full' | 'sqlite-group' | 'sqlite-group-thread';

export function openStore(kind: StoreKind, path: string, lib: WorkloadLibrary = built): SessionStore {
  const { createMemoryStore, createSqliteStore } = lib;
  if (kind === 'memory') return createMemoryStore();
  // TROUPE_BENCH_GROUP='{"maxBatch":4096}' measures other group commit options.
  if (kind === 'sqlite-group')
    return createSqliteStore(path, { groupCommit: JSON.parse(process.env.TROUPE_BENCH_GROUP ?? 'true') });
  if (kind === 'sqlite-group-thread')
    return createSqliteStore(path, {
      groupCommit: { ...JSON.parse(process.env.TROUPE_BENCH_GROUP ?? '{}'), writer: 'thread' },
    });
  return createSqliteStore(path, { synchronous: kind === 'sqlite-full' ? 'full' : 'normal' });
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/** `median (min–max)` with a precision that suits the size. */
export function spread(values: readonly number[]): string {
  const f = (value: number) =>
    value >= 1000
      ? Math.round(value).toLocaleString('en-US')
      : value >= 100
        ? value.toFixed(0)
        : value >= 10
          ? value.toFixed(1)
          : value.toFixed(2);
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

/**
 * The disk's price of one durable commit, measured beside the subjects: a tiny commit (one event) on a SQLite store
 * with synchronous FULL is one fsync of the write-ahead log and little else. On a shared VM it moves by 10x within
 * minutes; a FULL figure divided by it is a count of fsyncs, which does not.
 */
export function fsyncProbe(path: string): { commit: () => number; close: () => void } {
  const store = createSqliteStore(path);
  const id = 'probe';
  store.commit(id, {
    session: {
      id,
      status: 'idle',
      entry: 'probe',
      agent: 'probe',
      turns: 0,
      transcript: [],
      turn: null,
      queued: [],
      options: {
        maxHandoffDepth: 0,
        maxHandoffRevisits: 0,
        supervision: {
          strategy: 'stop',
          maxRestarts: 0,
          onExhausted: 'escalate',
          backoffMs: 0,
          backoffFactor: 1,
          maxBackoffMs: 0,
        },
      },
      updatedAt: 0,
    },
  });
  let seq = 0;
  return {
    /** One tiny commit; returns the µs it took. */
    commit() {
      const start = performance.now();
      store.commit(id, {
        events: [
          {
            time: 0,
            agent: 'probe',
            sessionId: id,
            route: 'probe',
            depth: 0,
            seq: seq++,
            type: 'run_end',
            data: {},
          },
        ] as never,
      });
      return (performance.now() - start) * 1000;
    },
    close: () => store.close(),
  };
}

/**
 * The commits of `sessions` W2 sessions (one turn of `steps` tool steps each, 3 by default, 10 ms model), as the
 * runtime makes them on the memory store, in the order it made them (copied: the memory store keeps its own).
 */
export async function captureCommits(sessions: number, steps = 3): Promise<[string, CommitBatch][]> {
  const commits: [string, CommitBatch][] = [];
  const memory = built.createMemoryStore();
  // The runtime's commits of a session share their message objects (a store writes a message it already wrote
  // once); the copies keep that: the same message text in a session's commits is one object.
  const messagesOf = new Map<string, Map<string, unknown>>();
  const shared = (sessionId: string, batch: CommitBatch): CommitBatch => {
    const row = batch.session as unknown as Record<string, unknown> | undefined;
    if (row === undefined) return batch;
    let seen = messagesOf.get(sessionId);
    if (seen === undefined) {
      seen = new Map();
      messagesOf.set(sessionId, seen);
    }
    const known = seen;
    const intern = (list: unknown): unknown =>
      Array.isArray(list)
        ? list.map((message: unknown) => {
            const key = JSON.stringify(message);
            const found = known.get(key);
            if (found !== undefined) return found;
            known.set(key, message);
            return message;
          })
        : list;
    row.transcript = intern(row.transcript);
    const turn = row.turn as {
      session: Record<string, unknown>;
      agent: { checkpoint: Record<string, unknown> } | null;
    } | null;
    if (turn) {
      turn.session.transcript = intern(turn.session.transcript);
      turn.session.agentHistory = intern(turn.session.agentHistory);
      if (turn.agent) turn.agent.checkpoint.history = intern(turn.agent.checkpoint.history);
    }
    return batch;
  };
  const system = built.createAgentSystem({
    store: {
      ...memory,
      commit(sessionId, batch) {
        commits.push([sessionId, shared(sessionId, structuredClone(batch))]);
        return memory.commit(sessionId, batch);
      },
    },
  });
  const agent = stepAgent({ steps, modelDelayMs: 10 });
  const results = await Promise.all(
    Array.from(
      { length: sessions },
      (_, index) => system.spawn(agent, 'Do the task.', { sessionId: `s${index}` }).result,
    ),
  );
  await system.shutdown();
  if (results.some((result) => result.text !== answerAfter(steps))) throw new Error('a turn ended early');
  return commits;
}
