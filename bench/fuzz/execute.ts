/**
 * Runs one fuzz scenario through the public API (run(), stream() or a session of several turns) and checks what
 * every run promises: it ends (a watchdog per run), with one typed result whose stop reason is from the closed set,
 * a valid history in which every tool-call id is unique and answered exactly once (the next run accepts it), the
 * caller's history untouched, bad input refused with a typed error before anything ran, no secret in events or
 * inspection frames, no event of a turn after its run_end, and nothing added to Object.prototype.
 */
import {
  type Agent,
  type ApprovalDecision,
  ApprovalError,
  type ApprovalRequest,
  agentTool,
  askHuman,
  ConfigError,
  createAgentSystem,
  defineAgent,
  HistoryValidationError,
  type JsonValue,
  type Message,
  ModelError,
  type ModelErrorKind,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type RunEvent,
  type RunInput,
  type RunItem,
  type RunResult,
  run,
  SessionClosedError,
  statusOf,
  stopReasons,
  stream,
  type Tool,
  type ToolCall,
  tool,
  validateHistory,
} from 'troupe';
import { z } from 'zod';
import type {
  AgentSpec,
  ApprovalMode,
  ArgsKind,
  CallSpec,
  HistorySpec,
  InputSpec,
  Scenario,
  ToolKind,
  TurnSpec,
} from './scenario.ts';

export type ProblemKind =
  | 'hang'
  | 'untyped_rejection'
  | 'rejected_after_running'
  | 'accepted_bad_input'
  | 'bad_result'
  | 'invalid_history'
  | 'duplicate_id'
  | 'history_not_extended'
  | 'caller_history_mutated'
  | 'next_run_refused'
  | 'event_order'
  | 'secret_leak'
  | 'prototype_polluted';

export interface Problem {
  kind: ProblemKind;
  detail: string;
}

export interface Outcome {
  /** Results checked: one per run, stream or session turn. */
  results: number;
  /** Calls refused with a typed error (ConfigError, HistoryValidationError...) before anything ran. */
  typedRejections: number;
  /** Their messages. */
  rejections: string[];
  /** Of those, refusals of input the scenario did not make bad on purpose (see `unexpected`). */
  unexpectedRejections: string[];
  problems: Problem[];
}

export interface ExecuteOptions {
  /** A run (or turn, or the session's shutdown) still pending after this long is a hang. */
  watchdogMs: number;
  /**
   * Keep clear of known bugs: run()/stream()'s onApproval only gives decisions of the request's kind (an approval
   * for a question, or an answer to an approval, makes the run wait forever; test/run/approval-decisions.test.ts),
   * and a session turn that never started is not held to its historyDelta (it reports the running turn's;
   * test/sessions/session-queued-turns.test.ts).
   */
  avoidKnownBugs?: boolean | undefined;
}

/** In an `apiKey` argument: redacted by its name wherever it appears, whatever the tool. */
const SECRET = 'sk-SECRET-';
/** In a `token` argument, which the `secret` tool declares secret: redacted in that tool's calls. */
const TOKEN = 'tok-SECRET-';
const usageOf = (output: number) => ({ input: 10, output, cached: 0, reasoning: 0 });
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
const never = new Promise<never>(() => undefined);

let idCounter = 0;
let weirdCounter = 0;
let throwCounter = 0;
let scenarioCounter = 0;

class Hang extends Error {}

/** Waits for `promise`, or throws Hang once `ms` have passed. */
async function watchdog<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Hang(`${what} still pending after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Tools

const outputSchema = z.object({ n: z.number() });

function buildTool(kind: ToolKind): Tool {
  switch (kind) {
    case 'echo':
      return tool({
        name: 'echo',
        description: 'Echoes its text',
        input: z.object({ text: z.string() }),
        execute: ({ text }) => `echo: ${text}`,
      });
    case 'add':
      return tool({
        name: 'add',
        description: 'Adds two numbers',
        input: z.object({ a: z.number(), b: z.number() }),
        execute: ({ a, b }) => a + b,
      });
    case 'slow':
      return tool({
        name: 'slow',
        description: 'Waits a little',
        input: z.object({ ms: z.number().int().min(0).max(50) }),
        execute: async ({ ms }, ctx) => {
          await sleep(ms, ctx.signal);
          return 'slept';
        },
      });
    case 'hang':
      // Never answers; only a tool timeout or the run's end gets past it.
      return tool({ name: 'hang', description: 'Never answers', input: z.object({}), execute: () => never });
    case 'thrower':
      return tool({
        name: 'thrower',
        description: 'Throws',
        input: z.object({}),
        execute: () => {
          const n = throwCounter++ % 5;
          if (n === 0) throw new Error('tool broke');
          if (n === 1) throw 'a string';
          if (n === 2) throw undefined;
          if (n === 3) throw { code: 42 };
          return Promise.reject(null);
        },
      });
    case 'fatal':
      return tool({
        name: 'fatal',
        description: 'Fails the agent',
        input: z.object({}),
        fatal: true,
        execute: () => {
          throw new Error('fatal tool failed');
        },
      });
    case 'secret':
      return tool({
        name: 'secret',
        description: 'Uses a token',
        input: z.object({ token: z.string(), apiKey: z.string() }),
        secret: ['token'],
        execute: ({ token }) => (token.startsWith(TOKEN) ? 'authorized' : 'denied'),
      });
    case 'weird':
      return tool({
        name: 'weird',
        description: 'Returns something odd',
        input: z.object({}),
        execute: () => {
          const n = weirdCounter++ % 8;
          if (n === 0) return undefined;
          if (n === 1) {
            const cyclic: Record<string, unknown> = { a: 1 };
            cyclic.self = cyclic;
            return cyclic;
          }
          if (n === 2) return 10n;
          if (n === 3) return () => 1;
          if (n === 4) return Symbol('s');
          if (n === 5) return 'x'.repeat(100_000);
          if (n === 6)
            return {
              toJSON() {
                throw new Error('toJSON broke');
              },
            };
          return Promise.reject('not an error');
        },
      });
    case 'guarded':
      return tool({
        name: 'guarded',
        description: 'Needs a person to approve',
        input: z.object({ text: z.string() }),
        needsApproval: true,
        execute: ({ text }) => `guarded: ${text}`,
      });
    case 'ask_human':
      return askHuman();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Models

interface FuzzModel extends ModelProvider {
  calls: number;
  /** Tool names the model may call for its handoffs and its agentTool (known once the agent is defined). */
  handoffTools: string[];
  nestedTool: string | null;
}

function deepArray(depth: number): JsonValue {
  let value: JsonValue = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function argsFor(name: string, kind: ArgsKind, pick: number): unknown {
  switch (kind) {
    case 'invalid':
      return { wrong: true, text: 5 };
    case 'string':
      return '{"text": "unterminated';
    case 'deep':
      return { text: 'deep', nested: deepArray(2_000 + (pick % 4) * 2_000) };
    case 'cyclic': {
      const cyclic: Record<string, unknown> = { text: 'cyclic' };
      cyclic.self = cyclic;
      return cyclic;
    }
    case 'nonjson':
      return [
        { text: 'n', n: Number.NaN },
        { text: 'b', b: 10n },
        { text: 'f', f: () => 1 },
        { text: 'd', d: new Date(0) },
      ][pick % 4];
    case 'missing':
      return undefined;
    case 'null':
      return null;
    case 'proto':
      return JSON.parse(
        '{"text":"p","__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}',
      );
    case 'valid':
      break;
  }
  switch (name) {
    case 'echo':
      return { text: `hi ${pick}` };
    case 'add':
      return { a: pick, b: 2 };
    case 'slow':
      return { ms: pick % 4 };
    case 'secret':
      return { token: `${TOKEN}${pick}`, apiKey: `${SECRET}${pick}` };
    case 'guarded':
      return { text: `please ${pick}` };
    case 'ask_human':
      return { question: `why ${pick}?` };
    default:
      if (name.startsWith('transfer_to_')) return { reason: 'theirs' };
      return name === 'echo' ? { text: 'x' } : { input: `task ${pick}` };
  }
}

function callName(spec: CallSpec, model: FuzzModel): string {
  switch (spec.name) {
    case 'unknown':
      return 'no_such_tool';
    case 'reserved':
      return 'react_invalid_reply';
    case 'handoff':
      return model.handoffTools.length > 0
        ? (model.handoffTools[spec.pick % model.handoffTools.length] as string)
        : 'transfer_to_nobody';
    case 'handoff_unknown':
      return 'transfer_to_nobody';
    case 'nested':
      return model.nestedTool ?? 'echo';
    default:
      return spec.name;
  }
}

function idsIn(messages: readonly Message[]): string[] {
  const ids: string[] = [];
  for (const message of messages)
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) ids.push(call.id);
  return ids;
}

function callsOf(turn: TurnSpec, request: ModelRequest, model: FuzzModel): ToolCall[] {
  const seen = idsIn(request.messages);
  const calls: ToolCall[] = [];
  for (const spec of turn.calls) {
    let id: string | undefined;
    switch (spec.id) {
      case 'fresh':
        id = `toolu_${++idCounter}`;
        break;
      case 'fixed':
        id = 'call_fixed';
        break;
      case 'suffixed':
        id = `call_fixed_${1 + (spec.pick % 4)}`;
        break;
      case 'dup':
        id = calls.at(-1)?.id ?? 'call_fixed';
        break;
      case 'empty':
        id = '';
        break;
      case 'zero':
        id = '0';
        break;
      case 'missing':
        id = undefined;
        break;
      case 'reuse':
        id = seen.length > 0 ? seen[spec.pick % seen.length] : 'call_1_0';
        break;
    }
    const name = callName(spec, model);
    calls.push({ id: id as string, name, args: argsFor(name, spec.args, spec.pick) as JsonValue });
  }
  return calls;
}

const errorKinds: ModelErrorKind[] = [
  'rate_limited',
  'overloaded',
  'server',
  'timeout',
  'network',
  'truncated_stream',
  'bad_request',
  'unknown',
];

function stopReasonOf(turn: TurnSpec, natural: ModelResponse['stopReason']): ModelResponse['stopReason'] {
  switch (turn.stopReason) {
    case 'natural':
      return natural;
    case 'none':
      return undefined;
    case 'bogus':
      return 'banana' as ModelResponse['stopReason'];
    default:
      return turn.stopReason;
  }
}

/** A provider that plays the agent's script (cycled): deltas, delays, answers, errors and malformed responses. */
function fuzzModel(spec: AgentSpec): FuzzModel {
  const model: FuzzModel = {
    provider: 'fuzz',
    model: 'fuzz-1',
    calls: 0,
    handoffTools: [],
    nestedTool: null,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const index = model.calls++;
      const turn = spec.script[index % spec.script.length] as TurnSpec;
      const { signal } = request;
      for (let d = 0; d < turn.deltas; d++) request.onDelta?.({ type: 'text', text: `piece ${d} ` });
      if (turn.extraDeltas) {
        request.onDelta?.({ type: 'reasoning', text: 'hmm ' });
        request.onDelta?.({ type: 'tool_call', index: 0, argsDelta: '{"te' });
      }
      if (turn.streamAfterAbort)
        signal.addEventListener('abort', () => {
          for (let i = 0; i < 3; i++) setTimeout(() => request.onDelta?.({ type: 'text', text: 'late ' }), i);
        });
      if (turn.delayMs > 0) await sleep(turn.delayMs, turn.honorAbort ? signal : undefined);
      // A hang needs something to end it: the agent's own timeout.
      if (turn.kind === 'hang' && spec.limits.timeoutMs !== null) {
        if (turn.honorAbort) await sleep(1e9, signal);
        else await never;
      }
      if (turn.honorAbort && signal.aborted) throw signal.reason;
      const usage = usageOf(turn.usage);
      switch (turn.kind) {
        case 'json':
          return { text: '{"n": 1}', toolCalls: [], stopReason: stopReasonOf(turn, 'end_turn'), usage };
        case 'badjson':
          return {
            text: turn.pick % 2 === 0 ? 'not json' : '{"n": "one"}',
            toolCalls: [],
            stopReason: stopReasonOf(turn, 'end_turn'),
            usage,
          };
        case 'tools':
          return {
            text: turn.pick % 3 === 0 ? 'let me check' : '',
            toolCalls: callsOf(turn, request, model),
            stopReason: stopReasonOf(turn, 'tool_use'),
            usage,
          };
        case 'refusal':
          return {
            text: '',
            refusal: 'I cannot help with that',
            toolCalls: [],
            stopReason: 'refusal',
            usage,
          };
        case 'content_filter':
          return { text: '', toolCalls: [], stopReason: 'content_filter', usage };
        case 'max_tokens':
          return { text: 'cut of', toolCalls: [], stopReason: 'max_tokens', usage };
        case 'max_tokens_empty':
          return { text: '', toolCalls: [], stopReason: 'max_tokens', usage };
        case 'model_error':
          throw new ModelError(
            errorKinds[turn.pick % errorKinds.length] as ModelErrorKind,
            'the model failed',
            {
              retryable: turn.pick % 2 === 0,
            },
          );
        case 'throw': {
          const thrown = ['a string', undefined, null, { code: 42 }, 42][turn.pick % 5];
          throw thrown;
        }
        case 'loose':
          return {
            text: 42,
            toolCalls: turn.pick % 2 === 0 ? null : [{ name: 5, id: 7, args: 'x' }, {}],
            stopReason: 'banana',
            usage: { input: -1, output: Number.NaN, cached: 'x' },
          } as unknown as ModelResponse;
        case 'nothing':
          return undefined as unknown as ModelResponse;
        default:
          return {
            text: `answer ${index}`,
            toolCalls: [],
            stopReason: stopReasonOf(turn, 'end_turn'),
            usage,
          };
      }
    },
  };
  return model;
}

// ---------------------------------------------------------------------------------------------------------------
// Agents

interface Built {
  entry: Agent<unknown>;
  agents: Agent<unknown>[];
  models: FuzzModel[];
  /** Some agent the entry reaches has a tool that waits for people. */
  asksPeople: boolean;
  /** Whether the agent of that name has the `secret` tool (which declares `token` secret). */
  declaresToken: (agent: string) => boolean;
}

/** Agents are defined from the last to the first: later ones by reference, earlier ones (cycles) by name. */
function build(scenario: Scenario): Built {
  const specs = scenario.agents;
  const names: string[] = [];
  for (const [i, spec] of specs.entries())
    names.push(names.includes(spec.name) ? `${spec.name}_${i}` : spec.name);
  const agents: Agent<unknown>[] = new Array(specs.length);
  const models: FuzzModel[] = [];
  let asksPeople = false;
  for (let i = specs.length - 1; i >= 0; i--) {
    const spec = specs[i] as AgentSpec;
    const model = fuzzModel(spec);
    models.push(model);
    const tools: Tool[] = [];
    for (const kind of spec.tools) {
      // A tool that never answers needs a limit to end it.
      if (kind === 'hang' && spec.limits.toolTimeoutMs === null && spec.limits.timeoutMs === null) continue;
      if (kind === 'guarded' || kind === 'ask_human') asksPeople = true;
      tools.push(buildTool(kind));
    }
    if (spec.nested !== null) {
      const nested = agentTool(agents[spec.nested] as Agent<unknown>);
      model.nestedTool = nested.name;
      tools.push(nested);
    }
    const handoffs = spec.handoffs.map((j) => (j > i ? (agents[j] as Agent<unknown>) : (names[j] as string)));
    const limits: Record<string, unknown> = { ...spec.limits };
    if (spec.limits.toolTimeoutMs === null) delete limits.toolTimeoutMs;
    if (spec.limits.timeoutMs === null) delete limits.timeoutMs;
    const agent = defineAgent({
      name: names[i] as string,
      description: `agent ${i}`,
      instructions: i % 2 === 0 ? 'Help.' : '',
      model,
      tools,
      ...(spec.output ? { output: outputSchema } : {}),
      limits,
      handoffs,
      ...(spec.filter === 'none' ? {} : { handoffInputFilter: filterOf(spec.filter) }),
      maxHandoffDepth: spec.maxHandoffDepth,
      maxHandoffRevisits: spec.maxHandoffRevisits,
    }) as Agent<unknown>;
    model.handoffTools = Object.keys(agent.handoffTools);
    agents[i] = agent;
  }
  const withToken = new Set(names.filter((_, i) => specs[i]?.tools.includes('secret')));
  return {
    entry: agents[0] as Agent<unknown>,
    agents,
    models,
    asksPeople,
    declaresToken: (agent) => withToken.has(agent),
  };
}

function filterOf(kind: AgentSpec['filter']) {
  return ({ history }: { history: readonly Message[] }): readonly Message[] => {
    switch (kind) {
      case 'lastUser':
        return history.filter((m) => m.role === 'user').slice(-1);
      case 'empty':
        return [];
      case 'throws':
        throw new Error('the filter broke');
      default:
        return [{ role: 'tool', toolCallId: 'nope', content: 'garbage' }] as Message[];
    }
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs and histories

function inputOf(spec: InputSpec, turn: number): { input: unknown; bad: boolean } {
  switch (spec) {
    case 'text':
      return { input: `question ${turn}`, bad: false };
    case 'empty_text':
      return { input: '', bad: false };
    case 'parts':
      return { input: [{ type: 'text', text: `question ${turn}` }], bad: false };
    case 'image':
      return {
        input: [
          { type: 'text', text: 'look' },
          { type: 'image', url: 'https://example.com/cat.png' },
        ],
        bad: false,
      };
    case 'bad_null':
      return { input: null, bad: true };
    case 'bad_number':
      return { input: 42, bad: true };
    case 'bad_empty_parts':
      return { input: [], bad: true };
    case 'bad_part':
      return { input: [{ type: 'text' }], bad: true };
    case 'bad_object':
      return { input: { type: 'text', text: 'x' }, bad: true };
  }
}

function badHistory(spec: HistorySpec): unknown {
  const call = { id: 'h1', name: 'echo', args: { text: 'x' } };
  const answer = { role: 'tool', toolCallId: 'h1', name: 'echo', content: 'x' };
  switch (spec) {
    case 'bad_duplicate_id':
      return [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: '', toolCalls: [call] },
        answer,
        { role: 'assistant', content: '', toolCalls: [call] },
        answer,
      ];
    case 'bad_unanswered':
      return [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: '', toolCalls: [call] },
        { role: 'user', content: 'b' },
      ];
    case 'bad_orphan_answer':
      return [{ role: 'user', content: 'a' }, answer];
    case 'bad_role':
      return [{ role: 'wizard', content: 'a' }];
    case 'bad_not_array':
      return { role: 'user', content: 'a' };
    default:
      return undefined;
  }
}

function approvalHandler(mode: ApprovalMode, fitKind: boolean) {
  return async (request: ApprovalRequest): Promise<ApprovalDecision> => {
    if (fitKind && (mode === 'answer' || mode === 'approve' || mode === 'slow'))
      return request.kind === 'question' ? { type: 'answer', text: '42' } : { type: 'approve' };
    switch (mode) {
      case 'reject':
        return { type: 'reject', reason: 'no' };
      case 'answer':
        return { type: 'answer', text: '42' };
      case 'throws':
        throw new Error('the handler broke');
      case 'garbage':
        return { type: 'maybe' } as unknown as ApprovalDecision;
      case 'slow':
        await sleep(2);
        return { type: 'approve' };
      default:
        return { type: 'approve' };
    }
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Checks

const typedErrors = [ConfigError, HistoryValidationError];
const isTyped = (error: unknown) => typedErrors.some((type) => error instanceof type);
const describe = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : String(error);

function idProblems(history: readonly Message[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const answers = new Map<string, number>();
  for (const message of history) {
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? []) {
        if (seen.has(call.id)) problems.push(`id ${call.id} used twice`);
        seen.add(call.id);
      }
    if (message.role === 'tool') answers.set(message.toolCallId, (answers.get(message.toolCallId) ?? 0) + 1);
  }
  for (const id of seen)
    if (answers.get(id) !== 1) problems.push(`call ${id} answered ${answers.get(id) ?? 0} times`);
  return problems;
}

const statuses = new Set(['completed', 'stopped', 'failed']);

/** Checks one result; `given` is the history the run was given (its prefix). */
function checkResult(
  result: RunResult<unknown>,
  given: readonly Message[],
  where: string,
  problems: Problem[],
): void {
  const add = (kind: ProblemKind, detail: string) => problems.push({ kind, detail: `${where}: ${detail}` });
  if (typeof result !== 'object' || result === null) {
    add('bad_result', `not a result: ${String(result)}`);
    return;
  }
  if (!stopReasons.includes(result.stopReason)) add('bad_result', `stop reason ${String(result.stopReason)}`);
  else if (!statuses.has(result.status) || statusOf(result.stopReason) !== result.status)
    add('bad_result', `status ${result.status} with stop reason ${result.stopReason}`);
  if (result.status === 'failed' && !result.error) add('bad_result', 'failed without an error');
  if (!Array.isArray(result.history)) {
    add('bad_result', 'no history');
    return;
  }
  try {
    validateHistory(result.history);
  } catch (error) {
    add('invalid_history', `${describe(error)} (stop reason ${result.stopReason})`);
  }
  for (const problem of idProblems(result.history)) add('duplicate_id', problem);
  if (
    result.history.length < given.length ||
    JSON.stringify(result.history.slice(0, given.length)) !== JSON.stringify(given)
  )
    add('history_not_extended', `the result's history does not start with the history given`);
  else if (
    !Array.isArray(result.historyDelta) ||
    JSON.stringify(result.historyDelta) !== JSON.stringify(result.history.slice(given.length))
  )
    add('bad_result', 'historyDelta is not what the run added to the history');
  for (const [key, value] of Object.entries(result.usage ?? {}))
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      add('bad_result', `usage.${key} is ${value}`);
  // A stopped run says why in its error, unless it stopped at a limit after one last answer of the model's.
  const answeredAtLimit =
    result.error === undefined &&
    (result.stopReason === 'max_steps' ||
      result.stopReason === 'duplicate_tool_call' ||
      result.stopReason === 'tool_call_limit');
  if (result.status === 'stopped' && !answeredAtLimit && result.error?.code !== result.stopReason)
    add('bad_result', `stopped (${result.stopReason}) with error code ${String(result.error?.code)}`);
  const answered = new Set(result.history.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  for (const step of result.steps ?? [])
    for (const call of step.toolCalls)
      if (!answered.has(call.id))
        add('bad_result', `step ${step.index} lists call ${call.id}, absent from the history`);
}

/** A single agent (no handoffs, no nested agent) makes at most maxSteps + maxDecodeRetries + 1 model calls. */
function checkBounds(
  scenario: Scenario,
  result: RunResult<unknown>,
  where: string,
  problems: Problem[],
): void {
  const [only] = scenario.agents;
  if (!only || scenario.agents.length > 1 || only.nested !== null) return;
  const bound = only.limits.maxSteps + only.limits.maxDecodeRetries + 1;
  if (result.modelCalls > bound)
    problems.push({
      kind: 'bad_result',
      detail: `${where}: ${result.modelCalls} model calls, bound ${bound}`,
    });
}

/** steps(): each tool call followed by its result, in call order; a final response iff the run completed. */
function checkSteps(
  steps: readonly RunItem[],
  result: RunResult<unknown>,
  where: string,
  problems: Problem[],
): void {
  const add = (detail: string) =>
    problems.push({ kind: 'event_order', detail: `${where}: steps(): ${detail}` });
  for (const [i, step] of steps.entries()) {
    if (step.type === 'tool_call') {
      const next = steps[i + 1];
      if (next?.type !== 'tool_result' || next.callId !== step.callId) {
        add(`call ${step.callId} is not followed by its result`);
        return;
      }
    }
  }
  const finals = steps.filter((step) => step.type === 'final_response');
  if (
    finals.length !== (result.status === 'completed' ? 1 : 0) ||
    (finals.length === 1 && steps.at(-1) !== finals[0])
  )
    add(`${finals.length} final responses for a run that ended ${result.status}`);
}

/** Events of each session in order: seq without gaps, and nothing of a turn once its run_end went out. */
function checkEvents(
  events: readonly RunEvent[],
  declaresToken: (agent: string) => boolean,
  where: string,
  problems: Problem[],
): void {
  const add = (kind: ProblemKind, detail: string) => problems.push({ kind, detail: `${where}: ${detail}` });
  const bySession = new Map<string, RunEvent[]>();
  for (const event of events) {
    const list = bySession.get(event.sessionId) ?? [];
    if (list.length === 0) bySession.set(event.sessionId, list);
    list.push(event);
    const json = JSON.stringify(event.data, (_k, v) => (typeof v === 'bigint' ? String(v) : v)) ?? '';
    if (json.includes(SECRET) || (json.includes(TOKEN) && declaresToken(event.agent)))
      add('secret_leak', `a ${event.type} event of ${event.agent} shows a secret: ${json.slice(0, 300)}`);
  }
  const afterEnd = new Set([
    'delta',
    'reasoning_delta',
    'tool_call_delta',
    'model_response',
    'tool_call',
    'tool_response',
    'usage',
  ]);
  for (const [session, list] of bySession) {
    let inTurn = false;
    for (const [i, event] of list.entries()) {
      if (i > 0 && event.seq !== (list[i - 1] as RunEvent).seq + 1) {
        add('event_order', `session ${session}: seq ${event.seq} after ${(list[i - 1] as RunEvent).seq}`);
        break;
      }
      if (event.depth === 0 && (event.type === 'run_start' || event.type === 'run_end')) {
        if (inTurn === (event.type === 'run_start')) {
          add(
            'event_order',
            `session ${session}: ${event.type} ${inTurn ? 'within' : 'outside'} a turn (seq ${event.seq})`,
          );
          break;
        }
        inTurn = event.type === 'run_start';
      } else if (!inTurn && afterEnd.has(event.type)) {
        add('event_order', `session ${session}: ${event.type} of ${event.route} after the turn's run_end`);
        break;
      }
    }
  }
}

/** Strings of an inspection event's own data (not what its actor refs reach): a secret must not be among them. */
function inspectionLeaks(value: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current === 'string') {
      if (current.includes(SECRET)) return true;
      continue;
    }
    if (typeof current !== 'object' || current === null || seen.has(current) || depth > 200) continue;
    seen.add(current);
    const prototype = Object.getPrototypeOf(current);
    if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) continue;
    for (const inner of Object.values(current)) stack.push([inner, depth + 1]);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------------
// Execution

export async function execute(scenario: Scenario, options: ExecuteOptions): Promise<Outcome> {
  const outcome: Outcome = {
    results: 0,
    typedRejections: 0,
    rejections: [],
    unexpectedRejections: [],
    problems: [],
  };
  const tag = `case ${++scenarioCounter}`;
  let built: Built;
  try {
    built = build(scenario);
  } catch (error) {
    // Agent names and tool names of JavaScript's prototypes may be refused at definition time, typed.
    if (isTyped(error)) rejected(outcome, error);
    else
      outcome.problems.push({
        kind: 'untyped_rejection',
        detail: `${tag}: defining agents: ${describe(error)}`,
      });
    return outcome;
  }
  if (scenario.entry === 'session') await executeSession(scenario, built, options, outcome, tag);
  else await executeRuns(scenario, built, options, outcome, tag);
  if (Object.hasOwn(Object.prototype, 'polluted') || ({} as Record<string, unknown>).polluted !== undefined) {
    outcome.problems.push({ kind: 'prototype_polluted', detail: `${tag}: Object.prototype.polluted exists` });
    delete (Object.prototype as Record<string, unknown>).polluted;
  }
  return outcome;
}

function rejected(outcome: Outcome, error: unknown): void {
  outcome.typedRejections += 1;
  outcome.rejections.push(describe(error));
}

const modelCalls = (built: Built) => built.models.reduce((sum, model) => sum + model.calls, 0);

async function executeRuns(
  scenario: Scenario,
  built: Built,
  options: ExecuteOptions,
  outcome: Outcome,
  tag: string,
): Promise<void> {
  let previous: Message[] | undefined;
  const inspectLeaks = { count: 0 };
  const side: Promise<void>[] = [];
  const inFlight = { count: 0 };
  for (const [t, turn] of scenario.turns.entries()) {
    const corrupt = t === 0 ? badHistory(scenario.history) : undefined;
    const history = corrupt ?? (scenario.history === 'chain' ? previous : undefined);
    const running = runOnce(scenario, built, options, outcome, `${tag} ${scenario.entry} #${t}`, {
      t,
      turn,
      history,
      corrupt: corrupt !== undefined,
      inspectLeaks,
      inFlight,
    });
    // Runs side by side with the next one, or one after the other (the history passed on).
    if (turn.sendEarly && scenario.history !== 'chain') {
      side.push(running.then(() => undefined));
      continue;
    }
    const result = await running;
    if (result === 'hang') break;
    if (result && Array.isArray(result.history)) previous = result.history;
  }
  await Promise.all(side);
  if (inspectLeaks.count > 0)
    outcome.problems.push({
      kind: 'secret_leak',
      detail: `${tag}: ${inspectLeaks.count} inspection frame(s) show a secret`,
    });
}

/** One run() or stream() and its checks; its result, undefined when it was refused, 'hang' when it never ended. */
async function runOnce(
  scenario: Scenario,
  built: Built,
  options: ExecuteOptions,
  outcome: Outcome,
  where: string,
  run_: {
    t: number;
    turn: Scenario['turns'][number];
    history: unknown;
    corrupt: boolean;
    inspectLeaks: { count: number };
    /** Runs of these agents going on (this one included): the others call the models too. */
    inFlight: { count: number };
  },
): Promise<RunResult<unknown> | undefined | 'hang'> {
  const { t, turn, history } = run_;
  const { input, bad: badInput } = inputOf(scenario.inputs[t] as InputSpec, t);
  const givenJson = JSON.stringify(history ?? null);
  const runOptions: Record<string, unknown> = { sessionId: `fuzz-${where.split(' ')[1]}-${t}` };
  if (history !== undefined) runOptions.history = history;
  if (scenario.budgetTokens !== null) runOptions.budget = { tokens: scenario.budgetTokens };
  if (scenario.approval !== 'none')
    runOptions.onApproval = approvalHandler(scenario.approval, options.avoidKnownBugs === true);
  if (scenario.badOption) runOptions.sesionId = 'typo';
  if (t % 4 === 3)
    runOptions.inspect = (event: { event?: unknown; snapshot?: unknown }) => {
      if (inspectionLeaks(event.event) || inspectionLeaks(event.snapshot)) run_.inspectLeaks.count += 1;
    };
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  if (turn.abortAfterMs !== null) {
    if (turn.abortAfterMs < 0) controller.abort();
    else timer = setTimeout(() => controller.abort(new Error('fuzz abort')), turn.abortAfterMs);
    runOptions.signal = controller.signal;
  }
  const expectReject =
    badInput ||
    run_.corrupt ||
    scenario.badOption ||
    unresolvedHandoffName(scenario) ||
    (built.asksPeople && scenario.approval === 'none' && needsPeopleAtTop(scenario));
  const before = modelCalls(built);
  const besideAtStart = run_.inFlight.count;
  run_.inFlight.count += 1;
  try {
    return await runChecked();
  } finally {
    run_.inFlight.count -= 1;
  }

  async function runChecked(): Promise<RunResult<unknown> | undefined | 'hang'> {
    let result: RunResult<unknown>;
    const events: RunEvent[] = [];
    const steps: RunItem[] = [];
    try {
      if (scenario.entry === 'run') {
        result = await watchdog(run(built.entry, input as RunInput, runOptions), options.watchdogMs, 'run()');
      } else {
        const s = stream(built.entry, input as RunInput, runOptions);
        await watchdog(
          (async () => {
            if (turn.steps) for await (const step of s.steps()) steps.push(step);
            else for await (const event of s) events.push(event);
          })(),
          options.watchdogMs,
          turn.steps ? 'stream().steps()' : 'stream() events',
        );
        result = await watchdog(s.result, options.watchdogMs, 'stream().result');
      }
    } catch (error) {
      clearTimeout(timer);
      if (error instanceof Hang) {
        outcome.problems.push({ kind: 'hang', detail: `${where}: ${error.message}` });
        return 'hang';
      }
      if (isTyped(error)) {
        rejected(outcome, error);
        // Side-by-side runs of the same agents may have called the models meanwhile.
        const alone = besideAtStart === 0 && run_.inFlight.count === 1;
        if (modelCalls(built) !== before && alone)
          outcome.problems.push({ kind: 'rejected_after_running', detail: `${where}: ${describe(error)}` });
        if (!expectReject) outcome.unexpectedRejections.push(`${where}: ${describe(error)}`);
      } else outcome.problems.push({ kind: 'untyped_rejection', detail: `${where}: ${describe(error)}` });
      return undefined;
    }
    clearTimeout(timer);
    outcome.results += 1;
    if (expectReject)
      outcome.problems.push({
        kind: 'accepted_bad_input',
        detail: `${where}: input or history should be refused`,
      });
    if (JSON.stringify(history ?? null) !== givenJson)
      outcome.problems.push({ kind: 'caller_history_mutated', detail: where });
    checkResult(result, (history as Message[] | undefined) ?? [], where, outcome.problems);
    checkBounds(scenario, result, where, outcome.problems);
    if (scenario.entry === 'stream' && !turn.steps) {
      checkEvents(events, built.declaresToken, where, outcome.problems);
      const ends = events.filter((e) => e.type === 'run_end' && e.depth === 0);
      if (events[0]?.type !== 'run_start' || ends.length !== 1 || events.at(-1) !== ends[0])
        outcome.problems.push({
          kind: 'event_order',
          detail: `${where}: a stream goes from one run_start to one run_end (${events[0]?.type} … ${events.at(-1)?.type}, ${ends.length} ends)`,
        });
    }
    if (scenario.entry === 'stream' && turn.steps) checkSteps(steps, result, where, outcome.problems);
    return result;
  }
}

/**
 * Whether run() must refuse the agents: a handoff given by name (to an earlier agent) whose target is not among the
 * agents reachable from the entry through handoffs given as agents.
 */
function unresolvedHandoffName(scenario: Scenario): boolean {
  const byReference = new Set<number>([0]);
  for (const i of byReference)
    for (const j of scenario.agents[i]?.handoffs ?? []) if (j > i) byReference.add(j);
  const reached = new Set<number>([0]);
  for (const i of reached)
    for (const j of scenario.agents[i]?.handoffs ?? []) {
      if (j < i && !byReference.has(j)) return true;
      reached.add(j);
    }
  return false;
}

/** Whether the entry agent or a handoff target has a tool waiting for people (run() then needs onApproval). */
function needsPeopleAtTop(scenario: Scenario): boolean {
  const seen = new Set<number>();
  const visit = (i: number): boolean => {
    if (seen.has(i)) return false;
    seen.add(i);
    const spec = scenario.agents[i] as AgentSpec;
    if (spec.tools.includes('guarded') || spec.tools.includes('ask_human')) return true;
    return spec.handoffs.some(visit);
  };
  return visit(0);
}

const sessionErrors = [ConfigError, HistoryValidationError, SessionClosedError, ApprovalError];
const isSessionTyped = (error: unknown) => sessionErrors.some((type) => error instanceof type);

async function executeSession(
  scenario: Scenario,
  built: Built,
  options: ExecuteOptions,
  outcome: Outcome,
  tag: string,
): Promise<void> {
  const system = createAgentSystem({ agents: built.agents });
  const events: RunEvent[] = [];
  const id = `fuzz-session-${tag.slice(5)}`;
  const mode = scenario.approval === 'none' ? 'approve' : scenario.approval;
  const decisions: Promise<unknown>[] = [];
  const turnReaders: Promise<void>[] = [];
  const decide = (request: ApprovalRequest) => {
    const session = system.get(request.sessionId);
    if (!session) return;
    // Sometimes the wrong kind of decision (approve a question, answer an approval): it is refused, typed, and a
    // rejection follows, as a person would retry.
    const decision =
      mode === 'reject' || mode === 'throws'
        ? session.reject(request.callId, 'no')
        : mode === 'answer'
          ? session.answer(request.callId, '42')
          : mode === 'garbage'
            ? session.reject(request.callId, '')
            : session.approve(request.callId);
    decisions.push(
      decision.catch((error: unknown) => {
        if (!isSessionTyped(error))
          outcome.problems.push({
            kind: 'untyped_rejection',
            detail: `${tag}: deciding: ${describe(error)}`,
          });
        return session.reject(request.callId, 'fallback').catch((again: unknown) => {
          if (!isSessionTyped(again))
            outcome.problems.push({
              kind: 'untyped_rejection',
              detail: `${tag}: deciding: ${describe(again)}`,
            });
        });
      }),
    );
  };
  const reading = (async () => {
    for await (const event of system.events()) {
      events.push(event);
      if (event.type === 'approval_requested') decide(event.data);
    }
  })();

  const first = inputOf(scenario.inputs[0] as InputSpec, 0);
  const corrupt = badHistory(scenario.history);
  const spawnOptions: Record<string, unknown> = { sessionId: id };
  if (corrupt !== undefined) spawnOptions.history = corrupt;
  if (scenario.budgetTokens !== null) spawnOptions.budget = { tokens: scenario.budgetTokens };
  if (scenario.badOption) spawnOptions.sesionId = 'typo';
  const sessionAbort = new AbortController();
  const firstTurn = scenario.turns[0];
  const timers: NodeJS.Timeout[] = [];
  if (firstTurn?.abortAfterMs != null) {
    if (firstTurn.abortAfterMs < 0) sessionAbort.abort();
    else timers.push(setTimeout(() => sessionAbort.abort('fuzz abort'), firstTurn.abortAfterMs));
    spawnOptions.signal = sessionAbort.signal;
  }
  const expectReject = first.bad || corrupt !== undefined || scenario.badOption;
  const before = modelCalls(built);
  let session: ReturnType<typeof system.spawn>;
  try {
    session = system.spawn(built.entry, first.input as RunInput, spawnOptions);
  } catch (error) {
    if (isTyped(error)) {
      rejected(outcome, error);
      if (modelCalls(built) !== before)
        outcome.problems.push({ kind: 'rejected_after_running', detail: `${tag} spawn: ${describe(error)}` });
      if (!expectReject) outcome.unexpectedRejections.push(`${tag} spawn: ${describe(error)}`);
    } else outcome.problems.push({ kind: 'untyped_rejection', detail: `${tag} spawn: ${describe(error)}` });
    for (const timer of timers) clearTimeout(timer);
    await finish();
    return;
  }
  if (expectReject)
    outcome.problems.push({
      kind: 'accepted_bad_input',
      detail: `${tag} spawn: input or history should be refused`,
    });

  if (scenario.stopAfterMs !== null) {
    const stopAfter = scenario.stopAfterMs;
    timers.push(
      setTimeout(() => {
        if (stopAfter % 2 === 0) void session.stop('fuzz stop');
        else void system.shutdown({ mode: scenario.shutdownMode, timeoutMs: 50 });
      }, stopAfter),
    );
  }

  const results: { turn: number; promise: Promise<RunResult<unknown>> }[] = [
    { turn: 0, promise: session.result },
  ];
  // Each turn's events, read from the tick it was sent: from its own run_start to its run_end.
  turnReaders.push(readTurn(0, first.input, session.result));
  function readTurn(t: number, input: unknown, sent: Promise<unknown>): Promise<void> {
    const seen: RunEvent[] = [];
    const where = `${tag} session turn #${t} events()`;
    return (async () => {
      for await (const event of session.events()) seen.push(event);
      // A message the session refused (it had closed) has no turn to read.
      const accepted = await sent.then(
        () => true,
        () => false,
      );
      if (seen.length === 0 || !accepted) return; // it never started: the session closed first
      const [head] = seen;
      const last = seen.at(-1);
      if (head?.type !== 'run_start' || JSON.stringify(head.data.input) !== JSON.stringify(input))
        outcome.problems.push({
          kind: 'event_order',
          detail: `${where}: starts with ${head?.type} ${JSON.stringify(head?.data).slice(0, 80)}, not this turn's run_start`,
        });
      if (last?.type !== 'run_end' || last.depth !== 0)
        outcome.problems.push({
          kind: 'event_order',
          detail: `${where}: ends with ${last?.type}, not its run_end`,
        });
    })().catch((error: unknown) => {
      outcome.problems.push({ kind: 'untyped_rejection', detail: `${where}: ${describe(error)}` });
    });
  }
  for (let t = 1; t < scenario.turns.length; t++) {
    const previousTurn = scenario.turns[t - 1];
    if (!previousTurn?.sendEarly) {
      try {
        await watchdog(
          (results.at(-1) as { promise: Promise<unknown> }).promise,
          options.watchdogMs,
          `turn ${t - 1}`,
        );
      } catch (error) {
        // Checked with the other results below; a hang ends the sends.
        if (error instanceof Hang) break;
      }
    }
    const turn = scenario.turns[t] as (typeof scenario.turns)[number];
    const next = inputOf(scenario.inputs[t] as InputSpec, t);
    const turnOptions: { signal?: AbortSignal; timeoutMs?: number } = {};
    if (turn.abortAfterMs !== null) {
      const controller = new AbortController();
      if (turn.abortAfterMs < 0) controller.abort();
      else timers.push(setTimeout(() => controller.abort(), turn.abortAfterMs));
      turnOptions.signal = controller.signal;
    }
    if (turn.turnTimeoutMs !== null) turnOptions.timeoutMs = turn.turnTimeoutMs;
    const sent = session.send(next.input as RunInput, turnOptions);
    results.push({ turn: t, promise: sent });
    if (!next.bad) turnReaders.push(readTurn(t, next.input, sent));
    if (next.bad) {
      try {
        await watchdog(sent, options.watchdogMs, `send #${t}`);
        outcome.problems.push({
          kind: 'accepted_bad_input',
          detail: `${tag} send #${t}: input should be refused`,
        });
      } catch (error) {
        if (error instanceof ConfigError) rejected(outcome, error);
        else
          outcome.problems.push({
            kind: 'untyped_rejection',
            detail: `${tag} send #${t}: ${describe(error)}`,
          });
      }
      results.pop();
    }
  }

  const settled: { turn: number; result: RunResult<unknown> }[] = [];
  for (const { turn, promise } of results) {
    const where = `${tag} session turn #${turn}`;
    try {
      settled.push({ turn, result: await watchdog(promise, options.watchdogMs, `turn ${turn}`) });
    } catch (error) {
      if (error instanceof Hang)
        outcome.problems.push({ kind: 'hang', detail: `${where}: ${error.message}` });
      else if (isSessionTyped(error)) rejected(outcome, error);
      else outcome.problems.push({ kind: 'untyped_rejection', detail: `${where}: ${describe(error)}` });
    }
  }
  for (const timer of timers) clearTimeout(timer);
  await finish();
  checkEvents(events, built.declaresToken, `${tag} session`, outcome.problems);
  // Turns start in order: the k-th result's turn started if the session emitted k + 1 run_starts.
  const starts = events.filter((e) => e.type === 'run_start' && e.depth === 0).length;
  let previousHistory: Message[] = (corrupt as Message[] | undefined) ?? [];
  for (const [k, { turn, result }] of settled.entries()) {
    outcome.results += 1;
    const where = `${tag} session turn #${turn}`;
    if (options.avoidKnownBugs && k >= starts) {
      // A queued turn ended before it started reports the running turn's delta and spend as its own
      // (test/sessions/session-queued-turns.test.ts): only its history is checked.
      checkResult(
        { ...result, historyDelta: result.history.slice(previousHistory.length) },
        previousHistory,
        where,
        outcome.problems,
      );
    } else checkResult(result, previousHistory, where, outcome.problems);
    if (Array.isArray(result.history)) previousHistory = result.history;
  }

  async function finish() {
    try {
      await watchdog(
        system.shutdown({ mode: scenario.shutdownMode, timeoutMs: 100 }),
        options.watchdogMs,
        'shutdown',
      );
      await watchdog(reading, options.watchdogMs, 'system.events() after shutdown');
      await watchdog(Promise.all(decisions), options.watchdogMs, 'approval decisions');
      await watchdog(Promise.all(turnReaders), options.watchdogMs, 'session.events() of the turns');
    } catch (error) {
      if (error instanceof Hang) outcome.problems.push({ kind: 'hang', detail: `${tag}: ${error.message}` });
      else
        outcome.problems.push({ kind: 'untyped_rejection', detail: `${tag} shutdown: ${describe(error)}` });
    }
  }
}
