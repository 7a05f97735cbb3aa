import { type AnyActorRef, createActor, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError, toErrorInfo } from '../core/errors.ts';
import { EventBus, type EventOrigin } from '../core/event-bus.ts';
import type { RunEvent } from '../core/events.ts';
import { validateHistory } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import { addCount, countOf } from '../core/records.ts';
import type { RunResult } from '../core/result.ts';
import { ResourceHoldings } from '../core/session-resources.ts';
import type { RunStatus } from '../core/stop-reason.ts';
import { compileMachine } from '../engine/compiled-machine.ts';
import type { AgentMachine } from '../machines/agent.ts';
import {
  type GroupContext,
  type GroupMachine,
  type GroupMember,
  groupMachine,
} from '../machines/supervisor-group.ts';
import { type PiiOptions, resolvePii } from '../pii/pii-options.ts';
import { inspectorMasking, piiOf } from '../pii/pii-run.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import type { RunResourceOptions } from '../resources/resource-run.ts';
import { agentInput, emitRunStart, hostAgent, openRunScope } from '../run/host.ts';
import { type InspectObserver, redactingInspector, secretArguments } from '../run/inspect.ts';
import { PhaseReporter, reportPhaseBeforeEffects } from '../run/phase-events.ts';
import type { RunOptions } from '../run/run.ts';
import { checkParallelOptions, checkParallelRunOptions, checkRunInput } from '../run/run-options.ts';
import { buildRunResult, failedBeforeAnyStep, runEndData } from '../run/run-result.ts';
import { attachRuntimes, callerOf, type RunRuntime } from '../run/run-runtime.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';
import { run, stream } from './run.ts';
import { type ApprovalHandler, needsSession } from './session-run.ts';

/** How `parallel` merges the answers: majority vote, all of them in order, or a synthesizer agent's answer. */
export type MergeStrategy = 'vote' | 'concat' | Agent<unknown>;

export interface ParallelOptions {
  merge: MergeStrategy;
}

export interface ParallelRunOptions {
  /** The run context every agent of the group gets (see RunOptions.context). */
  context?: unknown;
  /** Aborting it aborts every agent of the group (their results say `aborted`). */
  signal?: AbortSignal | undefined;
  history?: readonly Message[] | undefined;
  clock?: Clock | undefined;
  /** An inspection observer: the group is one root actor with the agents as its children. Secrets are redacted. */
  inspect?: InspectObserver | undefined;
  /** Every event of the group's agents, each attributed to its agent. */
  onEvent?: ((event: RunEvent) => void) | undefined;
  /** Budgets: the group's calls draw on this manager (and on `parentScope`'s budgets when nested). */
  resources?: ResourceManager | undefined;
  budget?: RunResourceOptions['budget'] | undefined;
  tenant?: string | undefined;
  parentScope?: string | undefined;
  /** Decides on calls that wait for people, as run()'s `onApproval` does, for every agent of the group. */
  onApproval?: ApprovalHandler | undefined;
  /** Masks personal data in the group's events (see RunOptions.pii). */
  pii?: PiiOptions | undefined;
  /** The audit log every agent of the group records in. */
  audit?: AuditLog | undefined;
  /** The tool context (`ctx`) of the run that starts the group: its spend counts on that run's budgets. */
  parent?: RunOptions['parent'];
}

/** The merged answer of agents that worked side by side on one task. */
export interface ParallelResult {
  /** completed when the merge produced an answer; failed when no agent completed (or the synthesizer failed). */
  status: RunStatus;
  text: string;
  /** vote: the winning output; concat: every completed agent's output (or text), in order; synthesizer: its output. */
  output: JsonValue | undefined;
  /** Every agent's own result, in the order the agents were given. */
  results: RunResult<unknown>[];
  /** vote only: how many agents gave each distinct answer. */
  votes?: Record<string, number>;
  /** synthesizer only: its run. */
  synthesis?: RunResult<unknown>;
}

export interface ParallelGroup {
  readonly kind: 'parallel';
  readonly agents: readonly Agent<unknown>[];
  run(input: RunInput, options?: ParallelRunOptions): Promise<ParallelResult>;
}

let builtGroupMachine: GroupMachine | undefined;

/** The group supervisor with the real agent runtime; built once, on the first group run (provide() is not free). */
function runtimeGroupMachine(): GroupMachine {
  builtGroupMachine ??= compileMachine(groupMachine.provide({ actors: { agent: runtimeAgentMachine() } }));
  return builtGroupMachine;
}

/**
 * Runs several agents on the same task at the same time, as children of one group actor, then merges their
 * answers. An agent that fails does not fail the group; it just does not count. Rejects only for bad input.
 */
export function parallel(agents: readonly Agent<unknown>[], options: ParallelOptions): ParallelGroup {
  if (!Array.isArray(agents) || agents.length === 0 || agents.some((agent) => agent?.kind !== 'agent'))
    throw new ConfigError('parallel(): give a non-empty array of agents from defineAgent().');
  checkParallelOptions(options, 'parallel()');
  const merge = options.merge;
  if (merge !== 'vote' && merge !== 'concat' && (merge as Agent<unknown> | undefined)?.kind !== 'agent')
    throw new ConfigError("parallel(): merge must be 'vote', 'concat' or a synthesizer agent.");
  const group = [...agents];
  return {
    kind: 'parallel',
    agents: group,
    async run(input, runOptions = {}) {
      checkRunInput(input, 'parallel().run()');
      checkParallelRunOptions(runOptions, 'parallel().run()');
      // Agents that can hand off need a session of their own; the others are children of one group actor.
      const apart = group.map((agent) => needsSession(agent));
      const together = group.filter((_agent, index) => !apart[index]);
      const [grouped, separate] = await Promise.all([
        together.length > 0 ? runGroup(together, input, runOptions) : Promise.resolve([]),
        Promise.all(
          group.filter((_agent, index) => apart[index]).map((agent) => runApart(agent, input, runOptions)),
        ),
      ]);
      const results = apart.map(
        (isApart) => (isApart ? separate.shift() : grouped.shift()) as RunResult<unknown>,
      );
      const done = results.filter((result) => result.status === 'completed');
      if (merge === 'vote') return vote(results, done);
      if (merge === 'concat') return concat(results, done);
      const { history: _history, ...synthOptions } = runOptionsOf(runOptions);
      return synthesize(merge, input, results, done, synthOptions);
    },
  };
}

/** A member that needs a session of its own: its events still reach the group's `onEvent`. */
async function runApart(
  agent: Agent<unknown>,
  input: RunInput,
  options: ParallelRunOptions,
): Promise<RunResult<unknown>> {
  const onEvent = options.onEvent;
  if (!onEvent) return run(agent, input, runOptionsOf(options));
  const member = stream(agent, input, runOptionsOf(options));
  for await (const event of member) onEvent(event);
  return member.result;
}

function runOptionsOf(options: ParallelRunOptions): RunOptions {
  const out: RunOptions = {};
  if (options.context !== undefined) out.context = options.context;
  if (options.signal) out.signal = options.signal;
  if (options.history) out.history = options.history;
  if (options.clock) out.clock = options.clock;
  if (options.inspect) out.inspect = options.inspect;
  if (options.resources) out.resources = options.resources;
  if (options.tenant !== undefined) out.tenant = options.tenant;
  if (options.parentScope !== undefined) out.parentScope = options.parentScope;
  if (options.onApproval) out.onApproval = options.onApproval;
  if (options.pii) out.pii = options.pii;
  if (options.audit) out.audit = options.audit;
  if (options.parent) out.parent = options.parent;
  return out;
}

/** One group actor, one child per agent, each started by the run host; resolves with every result in order. */
function runGroup(
  agents: Agent<unknown>[],
  input: RunInput,
  options: ParallelRunOptions,
): Promise<RunResult<unknown>[]> {
  const history = options.history ?? [];
  validateHistory(history);
  const groupId = crypto.randomUUID();
  const caller = callerOf(options.parent);
  const clock = options.clock ?? caller?.clock ?? systemClock;
  const bus = new EventBus(groupId, clock);
  const undo: (() => void)[] = [];
  const audit = options.audit ?? caller?.audit;
  const resourceOptions: RunResourceOptions = {};
  for (const key of ['resources', 'budget', 'tenant', 'parentScope'] as const)
    if (options[key] !== undefined) Object.assign(resourceOptions, { [key]: options[key] });
  const scope = openRunScope({
    sessionId: groupId,
    bus,
    clock,
    agents,
    resources: resourceOptions,
    caller,
    pii: resolvePii(options.pii, 'parallel().run()'),
    audit,
  });
  undo.push(scope.close);
  if (options.onEvent) undo.push(bus.subscribe(options.onEvent));
  const inspect = options.inspect ?? caller?.inspect;
  const runtimes = new Map<string, RunRuntime>();
  // What the members' tools open for the group's session is closed when the group ends.
  const holdings = new ResourceHoldings();
  undo.push(() => void holdings.release());
  const members: GroupMember[] = agents.map((agent, index) => {
    const id = `${agent.name.replace(/\./g, '_')}-${index + 1}`;
    const key = `${groupId}/${id}`;
    const timeoutMs = agent.limits.timeoutMs;
    const hosted = hostAgent({
      key,
      agent,
      bus,
      clock,
      context: options.context,
      resources: scope.resources,
      deadline: timeoutMs === null ? null : clock.now() + timeoutMs,
      inspect,
      onApproval: options.onApproval,
      audit,
      origin: { route: id, depth: 0 },
      holdings,
    });
    runtimes.set(key, hosted.runtime);
    undo.push(() => hosted.release());
    return { id, input: agentInput(agent, key, [...history, userMessage(input)], history.length) };
  });
  const actor = createActor(runtimeGroupMachine(), {
    id: `parallel-${groupId}`,
    input: { members },
    clock,
    ...(inspect
      ? {
          inspect: redactingInspector(
            inspect,
            agents.flatMap((agent) => secretArguments(agent)),
            inspectorMasking(piiOf(bus)),
          ),
        }
      : {}),
  });
  attachRuntimes(actor, runtimes);
  return new Promise((resolve) => {
    let finished = false;
    const onAbort = () => actor.send({ type: 'abort', reason: 'the group was aborted' });
    const watching: { unsubscribe(): void }[] = [];
    const finish = (context: GroupContext | undefined, error?: unknown) => {
      if (finished) return;
      finished = true;
      for (const timer of timers) clock.clearTimeout(timer);
      for (const subscription of watching) subscription.unsubscribe();
      options.signal?.removeEventListener('abort', onAbort);
      const results = members.map((member, index) => {
        const output = context?.outputs[member.id];
        const result = output
          ? { ...buildRunResult<unknown>(output), sessionId: groupId }
          : failedBeforeAnyStep<unknown>(groupId, (agents[index] as Agent<unknown>).name, history, input, {
              name: 'InternalError',
              code: 'agent_crashed',
              message: (
                context?.failures[member.id] ?? toErrorInfo(error ?? new Error('the group ended early'))
              ).message,
            });
        if (bus.listening) bus.emit(result.agent, 'run_end', runEndData(result), originOf(member));
        return result;
      });
      for (const step of undo) step();
      resolve(results);
    };
    const timers: unknown[] = [];
    actor.subscribe({
      next: (snapshot) => {
        if (snapshot.status === 'done') finish(snapshot.output);
      },
      // A root actor without an error observer crashes the process; ours becomes failed results.
      error: (error) => finish(undefined, error),
    });
    if (bus.listening)
      members.forEach((member, index) => {
        emitRunStart(bus, agents[index] as Agent<unknown>, input, history.length, originOf(member));
      });
    actor.start();
    // Each member's phases and decode retries, as for a run of its own.
    members.forEach((member, index) => {
      const child = actor.getSnapshot().children[member.id] as AnyActorRef | undefined;
      if (!child || !bus.listening || finished) return;
      const agent = agents[index] as Agent<unknown>;
      const phases = new PhaseReporter((type, data) => bus.emit(agent.name, type, data, originOf(member)));
      watching.push(
        child.subscribe({
          next: (snapshot: SnapshotFrom<AgentMachine>) => phases.observe(snapshot),
          error: () => undefined,
        }),
      );
      phases.observe(child.getSnapshot() as SnapshotFrom<AgentMachine>);
      reportPhaseBeforeEffects(child, phases);
    });
    agents.forEach((agent, index) => {
      const timeoutMs = agent.limits.timeoutMs;
      const id = (members[index] as GroupMember).id;
      if (timeoutMs !== null && !finished)
        timers.push(clock.setTimeout(() => actor.send({ type: 'timeout', id }), timeoutMs));
    });
    if (!finished) {
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (options.signal?.aborted) onAbort();
    }
  });
}

/** Where a member's events come from: its id in the group (the same agent may be a member twice). */
function originOf(member: GroupMember): EventOrigin {
  return { route: member.id, depth: 0 };
}

function answerOf(result: RunResult<unknown>): JsonValue {
  return result.output !== undefined ? (result.output as JsonValue) : result.text;
}

/** Answers compare after trimming and lower-casing text, or as canonical JSON for structured outputs. */
function ballot(result: RunResult<unknown>): string {
  const answer = answerOf(result);
  return typeof answer === 'string' ? answer.trim().toLowerCase() : JSON.stringify(answer);
}

function vote(results: RunResult<unknown>[], done: RunResult<unknown>[]): ParallelResult {
  const votes: Record<string, number> = {};
  // Answers are model text: "constructor" or "__proto__" must count like any other answer.
  for (const result of done) addCount(votes, ballot(result));
  let winner: RunResult<unknown> | undefined;
  for (const result of done) {
    // The most votes wins; a tie goes to the answer given first.
    if (!winner || countOf(votes, ballot(result)) > countOf(votes, ballot(winner))) winner = result;
  }
  if (!winner) return { status: 'failed', text: '', output: undefined, results, votes };
  return { status: 'completed', text: winner.text, output: answerOf(winner), results, votes };
}

function concat(results: RunResult<unknown>[], done: RunResult<unknown>[]): ParallelResult {
  if (done.length === 0) return { status: 'failed', text: '', output: undefined, results };
  return {
    status: 'completed',
    text: done.map((result) => `[${result.agent}]\n${result.text}`).join('\n\n'),
    output: done.map(answerOf),
    results,
  };
}

async function synthesize(
  synthesizer: Agent<unknown>,
  input: RunInput,
  results: RunResult<unknown>[],
  done: RunResult<unknown>[],
  options: RunOptions,
): Promise<ParallelResult> {
  if (done.length === 0) return { status: 'failed', text: '', output: undefined, results };
  const task =
    typeof input === 'string' ? input : input.map((part) => (part.type === 'text' ? part.text : '')).join('');
  const answers = done.map((result) => `[${result.agent}]\n${result.text}`).join('\n\n');
  const synthesis = await run(
    synthesizer,
    `Task: ${task}\n\nAnswers from ${done.length} agent(s):\n\n${answers}\n\nMerge them into one answer.`,
    options,
  );
  return {
    status: synthesis.status === 'completed' ? 'completed' : 'failed',
    text: synthesis.text,
    output: answerOf(synthesis),
    results,
    synthesis,
  };
}
