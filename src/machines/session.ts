import { and, assign, emit, enqueueActions, fromCallback, not, sendTo, setup } from 'xstate';
import type { ErrorInfo } from '../core/errors.ts';
import type { RunEventData } from '../core/events.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import type { JsonValue } from '../core/json.ts';
import type { ResolvedLimits } from '../core/limits.ts';
import type { Message, ToolMessage } from '../core/messages.ts';
import { ownValue } from '../core/records.ts';
import type { RunStatus, StopReason } from '../core/stop-reason.ts';
import { addUsage, emptyUsage, type Usage } from '../core/usage.ts';
import {
  type AgentCheckpoint,
  type AgentMachineInput,
  type AgentMachineOutput,
  agentMachine,
  type GuardrailPlan,
  runSpendOf,
} from './agent.ts';
import type { SupervisionPolicy } from './supervision.ts';

export {
  defaultSupervision,
  type SupervisionOptions,
  type SupervisionPolicy,
  type SupervisionStrategy,
} from './supervision.ts';

/**
 * The session supervisor: one root actor per session that runs its agents, moves the conversation on handoffs
 * and restarts, stops or escalates a failed agent. It owns a small tree: the agent that holds the
 * conversation now (a child with an explicit id, stopped with stopChild when it is done) and one effects
 * actor. Pure: what needs functions or I/O (the handoff input filter, loading a checkpoint from the store) is
 * a command to the effects actor; back-off uses the actor's injected clock through `after`.
 *
 *   preparing -> running -> (handoff accepted | refused) -> preparing ...
 *                        -> idle (turn over; a user message starts the next turn) -> preparing ...
 *             running -> (agent failed) -> backingOff -> preparing (from the checkpoint) | idle (stop) | failed
 *   closed | failed  (final)
 *
 * Sub-agents of agentTool calls are children too (`sub-N`, started and stopped on the runtime's delegate.start /
 * delegate.end); their results go back to the calling tool, not through this machine. Handoffs and supervision
 * decisions are emitted (`handoff`, `supervisor`) for the session's event stream.
 */

/**
 * What the session machine needs to know about an agent: data only (tools and agents by name, no functions), so
 * the persisted snapshot holds the whole state.
 */
export interface AgentDescriptor {
  limits: ResolvedLimits;
  toolNames: readonly string[];
  hasOutputSchema: boolean;
  handoffTools: Record<string, string>;
  /** Which guardrail states the agent's runs enter; absent without guardrails. */
  guardrails?: GuardrailPlan;
}

export interface HandoffLimits {
  maxDepth: number;
  maxRevisits: number;
}

/** How a turn ended; the runtime builds the RunResult from it and the transcript. */
export interface TurnOutcome {
  status: RunStatus;
  stopReason: StopReason;
  error: ErrorInfo | null;
  /** The agent that answered (or was holding the conversation when the turn ended). */
  agent: string;
  text: string;
  output: JsonValue | null;
  outputDecoded: boolean;
  truncated: boolean;
  usage: Usage;
  modelCalls: number;
  toolCallsRun: number;
  path: string[];
  /** Index in the transcript of this turn's user message. */
  turnStart: number;
  /** The guardrail that blocked the turn, when one did. */
  guardrail?: GuardrailBlock;
}

interface Spent {
  usage: Usage;
  modelCalls: number;
  toolCallsRun: number;
}

export interface SessionConfig {
  sessionId: string;
  agents: Record<string, AgentDescriptor>;
  handoffLimits: HandoffLimits;
  supervision: SupervisionPolicy;
}

export interface SessionMachineInput {
  sessionId: string;
  entry: string;
  agents: Record<string, AgentDescriptor>;
  /** The caller's history followed by the first user message. */
  history: Message[];
  handoffLimits: HandoffLimits;
  supervision: SupervisionPolicy;
  /** Recover a turn that was interrupted (the process died): start by resuming `current` from its checkpoint. */
  restore?: SessionRestore;
  /** Turns the session finished before this actor started (a restored session continues its numbering). */
  turns?: number;
}

/** What a checkpoint records about the session around it, so an interrupted turn can be recovered in a new process. */
export type SessionRestore = Pick<
  SessionContext,
  | 'current'
  | 'transcript'
  | 'turnStart'
  | 'agentHistory'
  | 'agentBase'
  | 'path'
  | 'refusals'
  | 'spent'
  | 'segment'
  | 'turns'
>;

/**
 * The session machine's context. Kept to at most 19 top-level keys on purpose: every `assign` copies the context
 * with Object.assign, which V8 does in ~0.1 µs up to 19 keys and ~7 µs from 20 on (bench/experiments/context-copy.ts).
 */
export interface SessionContext {
  /** What does not change during the session. */
  config: SessionConfig;
  /** The agent holding the conversation. */
  current: string;
  /** The agent that handed off to `current`, while its input filter is still to be applied. */
  handingOffFrom: string | null;
  /** The whole conversation, up to where the current agent's own messages start. */
  transcript: Message[];
  turnStart: number;
  /** The current agent's input history and where its own messages start in it. */
  agentHistory: Message[];
  agentBase: number;
  /** Counters and history to start the next child from (a refused handoff); null for a fresh start. */
  resume: AgentCheckpoint | null;
  /** Increments on every fresh agent start; a stored checkpoint is only used for the same segment. */
  segment: number;
  /** Whether the next preparation loads the last checkpoint (after a restart). */
  fromCheckpoint: boolean;
  childSeq: number;
  activeId: string | null;
  path: string[];
  refusals: number;
  restarts: number;
  spent: Spent;
  /** Turns finished so far; the runtime resolves one result per increment. */
  turns: number;
  lastTurn: TurnOutcome | null;
  stopping: boolean;
}

/** Commands to the session's effects actor, and its answers. */
export type SessionCommand = {
  type: 'prepare';
  agent: string;
  /** Apply this agent's handoff input filter; null: use the history as it is. */
  filterFrom: string | null;
  history: Message[];
  fromCheckpoint: boolean;
  segment: number;
};

export type SessionEvent =
  | { type: 'prepared'; history: Message[]; resume: AgentCheckpoint | null }
  | { type: 'prepare.failed'; error: ErrorInfo }
  /**
   * The active agent failed in a way only its supervisor handles (a fatal tool). `history` is its conversation at
   * the failure: a turn that ends here keeps what the agent had already said.
   */
  | { type: 'agent.crashed'; id: string; error: ErrorInfo; history?: Message[] }
  | { type: 'user.message'; message: Message }
  /** An agentTool call of the active agent: run the sub-agent as a child with this explicit id, until delegate.end. */
  | { type: 'delegate.start'; id: string; input: AgentMachineInput }
  | { type: 'delegate.end'; id: string }
  | { type: 'stop'; reason?: string }
  | { type: `xstate.done.actor.${string}`; actorId: string; output: AgentMachineOutput }
  | { type: `xstate.error.actor.${string}`; actorId: string; error: unknown };

/** Emitted for the event stream (the runtime stamps and forwards them): every handoff and supervision decision. */
export type SessionEmitted =
  | { type: 'handoff'; agent: string; data: RunEventData['handoff'] }
  | { type: 'supervisor'; agent: string; data: RunEventData['supervisor'] };

type DoneEvent = Extract<SessionEvent, { output: AgentMachineOutput }>;

function doneOutput(event: SessionEvent): AgentMachineOutput | undefined {
  return 'output' in event && event.type.startsWith('xstate.done.actor.')
    ? (event as DoneEvent).output
    : undefined;
}

function failureOf(event: SessionEvent): ErrorInfo {
  if (event.type === 'agent.crashed') return event.error;
  if ('error' in event) {
    const error = event.error as unknown;
    if (error instanceof Error) return { name: error.name, code: 'agent_crashed', message: error.message };
    if (typeof error === 'object' && error !== null && 'message' in error)
      return {
        name: 'Error',
        code: 'agent_crashed',
        message: String((error as { message: unknown }).message),
      };
    return { name: 'Error', code: 'agent_crashed', message: String(error) };
  }
  return { name: 'Error', code: 'agent_crashed', message: 'The agent actor failed.' };
}

function actorIdOf(event: SessionEvent): string | undefined {
  if (event.type === 'agent.crashed') return event.id;
  return 'actorId' in event ? event.actorId : undefined;
}

function addSpent(spent: Spent, output: AgentMachineOutput): Spent {
  // The agent's run in all: its agents used as tools and MCP sampling included.
  const run = runSpendOf(output);
  return {
    usage: addUsage(spent.usage, run.usage),
    modelCalls: spent.modelCalls + run.modelCalls,
    toolCallsRun: spent.toolCallsRun + output.toolCallsRun,
  };
}

/** `messages` with every tool call that has no answer answered as not run (why: `reason`). */
function closeOpenCalls(messages: readonly Message[], reason: string): Message[] {
  const answered = new Set<string>();
  for (const message of messages) if (message.role === 'tool') answered.add(message.toolCallId);
  const out: Message[] = [];
  for (const message of messages) {
    out.push(message);
    if (message.role !== 'assistant' || !message.toolCalls) continue;
    for (const call of message.toolCalls)
      if (!answered.has(call.id)) out.push(answer(call, `Not run: ${reason}`, true));
  }
  return out;
}

function answer(call: { id: string; name: string }, content: string, isError: boolean): ToolMessage {
  return { role: 'tool', toolCallId: call.id, name: call.name, content, isError };
}

/**
 * The transcript with an agent's messages appended. Tool-call ids are unique within one agent's run, not across
 * agents or turns (a provider without ids gets synthetic ones per run), so an id already in the transcript is
 * renamed, in the assistant message and in the tool message that answers it, to keep the history valid.
 */
export function appendDelta(transcript: Message[], delta: readonly Message[]): Message[] {
  const used = new Set<string>();
  for (const message of transcript)
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) used.add(call.id);
  const renamed = new Map<string, string>();
  const out: Message[] = [...transcript];
  for (const message of delta) {
    if (message.role === 'assistant' && message.toolCalls?.some((call) => used.has(call.id))) {
      const clashing = new Set(message.toolCalls.filter((call) => used.has(call.id)).map((call) => call.id));
      // The calls that keep their id hold it before any new id is chosen, so no new id takes a sibling's.
      for (const call of message.toolCalls) used.add(call.id);
      const toolCalls = message.toolCalls.map((call) => {
        if (!clashing.has(call.id)) return call;
        let id = `${call.id}_${used.size}`;
        for (let n = 1; used.has(id); n++) id = `${call.id}_${used.size + n}`;
        renamed.set(call.id, id);
        used.add(id);
        return { ...call, id };
      });
      out.push({ ...message, toolCalls });
      continue;
    }
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) used.add(call.id);
    if (message.role === 'tool' && renamed.has(message.toolCallId)) {
      out.push({ ...message, toolCallId: renamed.get(message.toolCallId) as string });
      continue;
    }
    out.push(message);
  }
  return out;
}

/** Times `target` already appears on the path: a handoff to it beyond maxRevisits is refused. */
function visits(context: SessionContext, target: string): number {
  return context.path.filter((name) => name === target).length;
}

function outcomeOf(
  context: SessionContext,
  output: AgentMachineOutput | undefined,
  stopReason: StopReason,
  status: RunStatus,
  error: ErrorInfo | null,
): TurnOutcome {
  const spent = output ? addSpent(context.spent, output) : context.spent;
  return {
    status,
    stopReason,
    error,
    agent: context.current,
    text: output?.text ?? '',
    output: output?.outputDecoded ? output.output : null,
    outputDecoded: output?.outputDecoded ?? false,
    truncated: output?.truncated ?? false,
    usage: spent.usage,
    modelCalls: spent.modelCalls,
    toolCallsRun: spent.toolCallsRun,
    path: context.path,
    turnStart: context.turnStart,
    ...(output?.guardrail ? { guardrail: output.guardrail } : {}),
  };
}

/** A supervisor decision that ends the turn failed ('stop' keeps the session, 'escalate' fails it): its event and update. */
function failedTurn(decision: 'stop' | 'escalate', context: SessionContext, event: SessionEvent) {
  const error = failureOf(event);
  // What the agent said before it failed stays in the conversation, its unanswered calls answered as not run.
  const history = event.type === 'agent.crashed' ? event.history : undefined;
  const delta = history ? closeOpenCalls(history.slice(context.agentBase), error.message) : [];
  return {
    emitted: {
      type: 'supervisor' as const,
      agent: context.current,
      data: { decision, agent: context.current, error, restarts: context.restarts },
    },
    assignment: {
      turns: context.turns + 1,
      transcript: delta.length > 0 ? appendDelta(context.transcript, delta) : context.transcript,
      lastTurn: outcomeOf(context, undefined, 'error', 'failed', error),
    },
  };
}

function statusFor(reason: StopReason): RunStatus {
  return reason === 'completed' || reason === 'tool_failure_degraded'
    ? 'completed'
    : reason === 'error'
      ? 'failed'
      : 'stopped';
}

/** The agent's messages since it started, with the handoff call (left open by the agent machine) answered. */
function deltaWithAnswer(context: SessionContext, output: AgentMachineOutput, content: string): Message[] {
  const delta = output.history.slice(context.agentBase);
  return output.handoff ? [...delta, answer(output.handoff.call, content, true)] : delta;
}

/** Turn-start context changes: a new user message, the path restarts at the agent holding the conversation. */
function turnStart(
  context: Pick<SessionContext, 'current' | 'segment'>,
  transcript: Message[],
  userAt: number,
) {
  return {
    transcript,
    turnStart: userAt,
    path: [context.current],
    refusals: 0,
    restarts: 0,
    spent: { usage: emptyUsage, modelCalls: 0, toolCallsRun: 0 },
    handingOffFrom: null,
    resume: null,
    fromCheckpoint: false,
    segment: context.segment + 1,
  };
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionMachineInput,
    output: {} as SessionContext,
    emitted: {} as SessionEmitted,
  },
  actors: {
    /** Replaced by the runtime (src/sessions/session.ts) with the agent machine that runs its effects. */
    agent: agentMachine,
    /** Replaced by the runtime: applies handoff input filters and loads checkpoints from the store. */
    sessionEffects: fromCallback<SessionCommand, { sessionId: string }>(() => undefined),
  },
  guards: {
    isActiveDone: ({ context, event }) =>
      actorIdOf(event) === context.activeId && doneOutput(event) !== undefined,
    crashOfActive: ({ context, event }) => context.activeId !== null && actorIdOf(event) === context.activeId,
    stopping: ({ context }) => context.stopping,
    knowsCurrent: ({ context }) => Object.hasOwn(context.config.agents, context.current),
    fromSubAgent: ({ event }) => actorIdOf(event)?.startsWith('sub-') === true,
    handoffRequested: ({ event }) => doneOutput(event)?.handoff != null,
    // The path holds the agents of this turn: one more than the handoffs taken.
    depthExceeded: ({ context }) => context.path.length > context.config.handoffLimits.maxDepth,
    revisitRefused: ({ context, event }) => {
      const target = doneOutput(event)?.handoff?.target;
      return target !== undefined && visits(context, target) > context.config.handoffLimits.maxRevisits;
    },
    refusedBefore: ({ context }) => context.refusals > 0,
    canRestart: ({ context }) =>
      context.config.supervision.strategy === 'restart' &&
      context.restarts < context.config.supervision.maxRestarts,
    stopsOnFailure: ({ context }) =>
      context.config.supervision.strategy === 'stop' ||
      (context.config.supervision.strategy === 'restart' &&
        context.config.supervision.onExhausted === 'stop'),
  },
  delays: {
    backoff: ({ context }) =>
      Math.min(
        context.config.supervision.maxBackoffMs,
        context.config.supervision.backoffMs *
          context.config.supervision.backoffFactor ** Math.max(0, context.restarts - 1),
      ),
  },
  actions: {
    prepare: sendTo('effects', ({ context }) => ({
      type: 'prepare' as const,
      agent: context.current,
      filterFrom: context.handingOffFrom,
      history: context.transcript,
      fromCheckpoint: context.fromCheckpoint,
      segment: context.segment,
    })),
    startAgent: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'prepared') return;
      const descriptor = ownValue(context.config.agents, context.current);
      if (!descriptor) return;
      // A fresh start (a turn, an accepted handoff) takes the prepared, filtered history. A restart resumes the same
      // agent from the stored checkpoint (or from its start without one); a refused handoff from its last context.
      const restart = context.fromCheckpoint;
      const resume = restart ? event.resume : context.resume;
      const fresh = !restart && context.resume === null;
      const agentHistory = fresh ? event.history : context.agentHistory;
      const agentBase = fresh ? event.history.length : context.agentBase;
      const id = `${context.current.replace(/\./g, '_')}-${context.childSeq + 1}`;
      const input: AgentMachineInput = {
        sessionId: `${context.config.sessionId}/${context.current}`,
        agent: context.current,
        limits: descriptor.limits,
        toolNames: descriptor.toolNames,
        hasOutputSchema: descriptor.hasOutputSchema,
        history: resume ? resume.history : agentHistory,
        baseLength: agentBase,
        handoffTools: descriptor.handoffTools,
      };
      if (descriptor.guardrails) input.guardrails = descriptor.guardrails;
      if (resume) input.resume = resume;
      enqueue.assign({
        activeId: id,
        childSeq: context.childSeq + 1,
        agentHistory,
        agentBase,
        resume: null,
        handingOffFrom: null,
        fromCheckpoint: false,
      });
      enqueue.spawnChild('agent', { id, input });
    }),
    stopActive: enqueueActions(({ context, enqueue }) => {
      if (context.activeId !== null) enqueue.stopChild(context.activeId);
      enqueue.assign({ activeId: null });
    }),
    abortActive: enqueueActions(({ context, event, enqueue }) => {
      const reason = event.type === 'stop' && event.reason ? event.reason : 'the session was stopped';
      if (context.activeId !== null) enqueue.sendTo(context.activeId, { type: 'abort', reason });
      enqueue.assign({ stopping: true });
    }),
    endTurn: assign(({ context, event }) => {
      const output = doneOutput(event);
      if (!output) return {};
      const stopReason = output.stopReason ?? 'error';
      return {
        transcript: appendDelta(context.transcript, output.history.slice(context.agentBase)),
        turns: context.turns + 1,
        lastTurn: outcomeOf(context, output, stopReason, statusFor(stopReason), output.error),
      };
    }),
    endOnHandoffLimit: assign(({ context, event }) => {
      const output = doneOutput(event);
      if (!output?.handoff) return {};
      const why = context.refusals > 0 ? 'a refused handoff was asked for again' : 'the handoff depth limit';
      const message = `Handoff to ${output.handoff.target} not done: ${why} (maxHandoffDepth ${context.config.handoffLimits.maxDepth}, maxHandoffRevisits ${context.config.handoffLimits.maxRevisits}, path ${[...context.path, output.handoff.target].join(' -> ')}).`;
      return {
        transcript: appendDelta(context.transcript, deltaWithAnswer(context, output, `Not run: ${message}`)),
        turns: context.turns + 1,
        lastTurn: outcomeOf(context, output, 'handoff_limit', 'stopped', {
          name: 'RunStopped',
          code: 'handoff_limit',
          message,
        }),
      };
    }),
    emitHandoffLimit: emit(({ context, event }) => {
      const output = doneOutput(event);
      return {
        type: 'handoff' as const,
        agent: context.current,
        data: {
          from: context.current,
          to: output?.handoff?.target ?? '',
          outcome: 'limit' as const,
          depth: context.path.length - 1,
          path: context.path,
          reason: context.refusals > 0 ? 'repeated refused handoff' : 'maxHandoffDepth reached',
        },
      };
    }),
    refuseHandoff: enqueueActions(({ context, event, enqueue }) => {
      const output = doneOutput(event);
      if (!output?.handoff) return;
      const { target, call } = output.handoff;
      const reason = `${target} is already on the handoff path (${context.path.join(' -> ')}) and may be revisited at most ${context.config.handoffLimits.maxRevisits} time(s)`;
      enqueue.emit({
        type: 'handoff',
        agent: context.current,
        data: {
          from: context.current,
          to: target,
          outcome: 'refused',
          depth: context.path.length - 1,
          path: context.path,
          reason,
        },
      });
      enqueue.assign({
        refusals: context.refusals + 1,
        resume: {
          history: [
            ...output.history,
            answer(call, `Error: handoff to ${target} refused: ${reason}. Continue without it.`, true),
          ],
          step: output.step,
          modelCalls: output.modelCalls,
          toolCallsRun: output.toolCallsRun,
          toolCallCounts: output.toolCallCounts,
          callSignatures: output.callSignatures,
          degradedTools: output.degradedTools,
          usage: output.usage,
          openCalls: [],
          decision: null,
          retryCount: 0,
          forcedFinalAnswer: false,
          approvals: null,
          phase: 'toolUse',
        },
        handingOffFrom: null,
      });
    }),
    acceptHandoff: enqueueActions(({ context, event, enqueue }) => {
      const output = doneOutput(event);
      if (!output?.handoff) return;
      const { target, call } = output.handoff;
      enqueue.emit({
        type: 'handoff',
        agent: context.current,
        data: {
          from: context.current,
          to: target,
          outcome: 'accepted',
          depth: context.path.length,
          path: [...context.path, target],
        },
      });
      const delta = output.history.slice(context.agentBase);
      enqueue.assign({
        transcript: appendDelta(context.transcript, [
          ...delta,
          answer(call, `Transferred to ${target}.`, false),
        ]),
        spent: addSpent(context.spent, output),
        path: [...context.path, target],
        handingOffFrom: context.current,
        current: target,
        resume: null,
        segment: context.segment + 1,
      });
    }),
    recordRestart: enqueueActions(({ context, event, enqueue }) => {
      const restarts = context.restarts + 1;
      const { backoffMs, backoffFactor, maxBackoffMs } = context.config.supervision;
      enqueue.emit({
        type: 'supervisor',
        agent: context.current,
        data: {
          decision: 'restart',
          agent: context.current,
          error: failureOf(event),
          restarts,
          delayMs: Math.min(maxBackoffMs, backoffMs * backoffFactor ** (restarts - 1)),
        },
      });
      enqueue.assign({ restarts, fromCheckpoint: true, handingOffFrom: null });
    }),
    stopOnFailure: enqueueActions(({ context, event, enqueue }) => {
      const end = failedTurn('stop', context, event);
      enqueue.emit(end.emitted);
      enqueue.assign(end.assignment);
    }),
    escalate: enqueueActions(({ context, event, enqueue }) => {
      const end = failedTurn('escalate', context, event);
      enqueue.emit(end.emitted);
      enqueue.assign(end.assignment);
    }),
    failUnknownAgent: assign(({ context }) => ({
      turns: context.turns + 1,
      lastTurn: outcomeOf(context, undefined, 'error', 'failed', {
        name: 'ConfigError',
        code: 'agent_unknown',
        message: `The session has no agent named "${context.current}".`,
      }),
    })),
    failPreparation: assign(({ context, event }) => {
      if (event.type !== 'prepare.failed') return {};
      return {
        turns: context.turns + 1,
        lastTurn: outcomeOf(context, undefined, 'error', 'failed', event.error),
      };
    }),
    endStopped: assign(({ context, event }) => ({
      turns: context.turns + 1,
      lastTurn: outcomeOf(context, undefined, 'aborted', 'stopped', {
        name: 'RunStopped',
        code: 'aborted',
        message: event.type === 'stop' && event.reason ? event.reason : 'the session was stopped',
      }),
    })),
    startDelegate: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'delegate.start') enqueue.spawnChild('agent', { id: event.id, input: event.input });
    }),
    endDelegate: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'delegate.end') enqueue.stopChild(event.id);
    }),
    startNextTurn: assign(({ context, event }) => {
      if (event.type !== 'user.message') return {};
      const transcript = [...context.transcript, event.message];
      return turnStart(context, transcript, context.transcript.length);
    }),
  },
}).createMachine({
  id: 'session',
  options: { maxIterations: 1000 },
  context: ({ input }) => ({
    config: {
      sessionId: input.sessionId,
      agents: input.agents,
      handoffLimits: input.handoffLimits,
      supervision: input.supervision,
    },
    current: input.entry,
    agentHistory: [],
    agentBase: 0,
    childSeq: 0,
    activeId: null,
    turns: input.turns ?? 0,
    lastTurn: null,
    stopping: false,
    ...turnStart({ current: input.entry, segment: 0 }, input.history, input.history.length - 1),
    // Recovery: the first preparation loads the stored checkpoint of `current` and resumes it (as a restart does).
    ...(input.restore ? { ...input.restore, fromCheckpoint: true } : {}),
  }),
  invoke: {
    id: 'effects',
    src: 'sessionEffects',
    input: ({ context }) => ({ sessionId: context.config.sessionId }),
  },
  // Sub-agents of agentTool calls are children too (their results go back to the calling tool, not to this
  // machine): their done and error events are ignored by the handlers below, which only look at the active agent.
  on: {
    'delegate.start': { actions: 'startDelegate' },
    'delegate.end': { actions: 'endDelegate' },
    // A sub-agent's failure goes back to its calling tool through the runtime; left unhandled here, the event
    // would fail the whole session whatever state it is in.
    'xstate.error.actor.*': { guard: 'fromSubAgent' },
  },
  initial: 'preparing',
  states: {
    preparing: {
      entry: 'prepare',
      on: {
        prepared: [
          { guard: 'knowsCurrent', target: 'running', actions: 'startAgent' },
          // Cannot happen with a checked catalog; if it did, the turn fails rather than waiting forever.
          { target: 'idle', actions: 'failUnknownAgent' },
        ],
        'prepare.failed': { target: 'idle', actions: 'failPreparation' },
        stop: { target: 'closed', actions: 'endStopped' },
      },
    },
    running: {
      on: {
        'xstate.done.actor.*': [
          { guard: not('isActiveDone') },
          { guard: 'stopping', target: 'closed', actions: ['stopActive', 'endTurn'] },
          {
            guard: and(['handoffRequested', 'depthExceeded']),
            target: 'idle',
            actions: ['stopActive', 'emitHandoffLimit', 'endOnHandoffLimit'],
          },
          {
            guard: and(['handoffRequested', 'revisitRefused', 'refusedBefore']),
            target: 'idle',
            actions: ['stopActive', 'emitHandoffLimit', 'endOnHandoffLimit'],
          },
          {
            guard: and(['handoffRequested', 'revisitRefused']),
            target: 'preparing',
            actions: ['stopActive', 'refuseHandoff'],
          },
          { guard: 'handoffRequested', target: 'preparing', actions: ['stopActive', 'acceptHandoff'] },
          { target: 'idle', actions: ['stopActive', 'endTurn'] },
        ],
        'xstate.error.actor.*': [
          { guard: not('crashOfActive') },
          { guard: 'stopping', target: 'closed', actions: ['stopActive', 'endStopped'] },
          { guard: 'canRestart', target: 'backingOff', actions: ['stopActive', 'recordRestart'] },
          { guard: 'stopsOnFailure', target: 'idle', actions: ['stopActive', 'stopOnFailure'] },
          { target: 'failed', actions: ['stopActive', 'escalate'] },
        ],
        'agent.crashed': [
          { guard: not('crashOfActive') },
          { guard: 'stopping', target: 'closed', actions: ['stopActive', 'endStopped'] },
          { guard: 'canRestart', target: 'backingOff', actions: ['stopActive', 'recordRestart'] },
          { guard: 'stopsOnFailure', target: 'idle', actions: ['stopActive', 'stopOnFailure'] },
          { target: 'failed', actions: ['stopActive', 'escalate'] },
        ],
        stop: { actions: 'abortActive' },
      },
    },
    backingOff: {
      after: { backoff: 'preparing' },
      on: { stop: { target: 'closed', actions: 'endStopped' } },
    },
    idle: {
      on: {
        'user.message': { target: 'preparing', actions: 'startNextTurn' },
        stop: 'closed',
      },
    },
    closed: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }) => context,
});

export type SessionMachine = typeof sessionMachine;
