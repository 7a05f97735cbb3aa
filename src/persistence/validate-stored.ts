import type { ApprovalRecord, ApprovalStatus } from '../core/approvals.ts';
import { HistoryValidationError } from '../core/errors.ts';
import { answerUnrunCalls, validateHistory } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';
import { stopReasons } from '../core/stop-reason.ts';
import { type StoredSession, storedSessionStatuses } from './store.ts';
import { StoreCorruptError } from './store-errors.ts';
import type { StoredAgentCheckpoint } from './stored-format/stored-checkpoint.ts';

/**
 * Checks what a store reads back before the runtime resumes from it: a record that was damaged on disk, written by
 * something else, or cut short must be refused with a StoreCorruptError that names the session and says exactly
 * what is wrong (`turn.agent.checkpoint.history[3]: tool message answers call_9, ...`), never resumed half-way.
 *
 * Every field is read as an own property (`Object.hasOwn`), so nothing is taken from the prototype chain.
 */

export const approvalStatuses: readonly ApprovalStatus[] = [
  'pending',
  'approved',
  'rejected',
  'answered',
  'withdrawn',
];

/** Parses a JSON column; text that does not parse is a StoreCorruptError naming the session and the column. */
export function parseStoredJson(sessionId: string | undefined, what: string, text: unknown): JsonValue {
  if (typeof text !== 'string')
    throw new StoreCorruptError(sessionId, `${what} is stored as ${typeof text}, not as JSON text`);
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new StoreCorruptError(sessionId, `${what} is not valid JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}

/** The session row, checked whole: status, counters, transcript, the turn in progress and its agent checkpoint. */
export function validateStoredSession(sessionId: string, value: unknown): StoredSession {
  const check = new Checker(sessionId);
  const row = check.object(value, 'session');
  const id = check.string(row, 'id', 'session');
  if (id !== sessionId) check.fail('session.id', `is "${id}", not the session's own id`);
  const status = check.string(row, 'status', 'session');
  if (!sessionStatuses.has(status))
    check.fail('session.status', `"${status}" is not one of ${storedSessionStatuses.join(', ')}`);
  check.name(row, 'entry', 'session');
  const agent = check.name(row, 'agent', 'session');
  const turns = check.count(row, 'turns', 'session');
  check.history(check.field(row, 'transcript'), 'session.transcript');
  const turn = check.field(row, 'turn');
  check.turn(turn, 'session.turn');
  if (turn === null && resumable.has(status))
    check.fail('session.turn', `is null, but a ${status} session must hold the turn to resume`);
  if (turn !== null) {
    // Only a turn in progress is kept: a finished, stopped or failed session has none to resume from.
    if (!resumable.has(status))
      check.fail('session.turn', `is set, but a ${status} session holds no turn in progress`);
    check.heldBy(turn as Fields, agent, turns);
  }
  const queued = check.array(check.field(row, 'queued'), 'session.queued');
  for (const [index, input] of queued.entries()) check.input(input, `session.queued[${index}]`);
  check.options(check.field(row, 'options'), 'session.options');
  check.time(row, 'updatedAt', 'session');
  return value as StoredSession;
}

/**
 * An agent's checkpoint (the turn's, or a nested run's). Its history ends with the tool calls still open
 * (`openCalls`): it is checked as if those were answered, so exactly the open calls may be unanswered.
 */
export function validateAgentCheckpoint(
  sessionId: string,
  value: unknown,
  where = 'checkpoint',
): StoredAgentCheckpoint {
  new Checker(sessionId).checkpoint(value, where);
  return value as StoredAgentCheckpoint;
}

/** An approval record: known kind and status, a decision exactly when decided, and one that matches the status. */
export function validateApprovalRecord(
  sessionId: string,
  value: unknown,
  where = 'approval',
): ApprovalRecord {
  new Checker(sessionId).approval(value, where);
  return value as ApprovalRecord;
}

const sessionStatuses: ReadonlySet<string> = new Set(storedSessionStatuses);
const resumable: ReadonlySet<string> = new Set(['running', 'awaiting', 'suspended']);
const phases: ReadonlySet<string> = new Set(['toolUse', 'finalOutput']);
const forcedAnswerLimits: ReadonlySet<string> = new Set([
  'max_steps',
  'duplicate_tool_call',
  'tool_call_limit',
]);
const decisionKinds: ReadonlySet<string> = new Set([
  'continue_with_tools',
  'continue_thinking',
  'terminate_with_output',
  'terminate',
]);
const knownStopReasons: ReadonlySet<string> = new Set(stopReasons);
const requestKinds: ReadonlySet<string> = new Set(['approval', 'question']);
const knownApprovalStatuses: ReadonlySet<string> = new Set(approvalStatuses);
const strategies: ReadonlySet<string> = new Set(['restart', 'stop', 'escalate']);
const exhaustedActions: ReadonlySet<string> = new Set(['stop', 'escalate']);
const decisionStatus = new Map<string, ApprovalStatus>([
  ['approve', 'approved'],
  ['reject', 'rejected'],
  ['answer', 'answered'],
]);
const usageFields = ['input', 'output', 'cached', 'reasoning'] as const;

type Fields = Record<string, unknown>;

class Checker {
  readonly sessionId: string;
  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  fail(path: string, reason: string): never {
    throw new StoreCorruptError(this.sessionId, `${path} ${reason}`);
  }

  /** An own property, or undefined: a field missing from the record never comes from the prototype chain. */
  field(record: Fields, key: string): unknown {
    return Object.hasOwn(record, key) ? record[key] : undefined;
  }

  object(value: unknown, path: string): Fields {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      this.fail(path, `must be an object; got ${describe(value)}`);
    return value as Fields;
  }

  array(value: unknown, path: string): unknown[] {
    if (!Array.isArray(value)) this.fail(path, `must be an array; got ${describe(value)}`);
    return value;
  }

  string(record: Fields, key: string, path: string): string {
    const value = this.field(record, key);
    if (typeof value !== 'string') this.fail(`${path}.${key}`, `must be a string; got ${describe(value)}`);
    return value;
  }

  /** A non-empty string: an agent's, a tool's or a call's name. */
  name(record: Fields, key: string, path: string): string {
    const value = this.string(record, key, path);
    if (value.length === 0) this.fail(`${path}.${key}`, 'must not be empty');
    return value;
  }

  optionalString(record: Fields, key: string, path: string): void {
    if (this.field(record, key) !== undefined) this.string(record, key, path);
  }

  boolean(record: Fields, key: string, path: string): void {
    const value = this.field(record, key);
    if (typeof value !== 'boolean')
      this.fail(`${path}.${key}`, `must be true or false; got ${describe(value)}`);
  }

  /** A non-negative integer: counters, steps, indexes. */
  count(record: Fields, key: string, path: string): number {
    const value = this.field(record, key);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      this.fail(`${path}.${key}`, `must be a non-negative integer; got ${describe(value)}`);
    return value;
  }

  /** A non-negative finite number: token usage, milliseconds, money, factors. */
  amount(record: Fields, key: string, path: string): void {
    const value = this.field(record, key);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      this.fail(`${path}.${key}`, `must be a non-negative number; got ${describe(value)}`);
  }

  optionalAmount(record: Fields, key: string, path: string): void {
    if (this.field(record, key) !== undefined) this.amount(record, key, path);
  }

  /** A clock time in milliseconds since the epoch. */
  time(record: Fields, key: string, path: string): void {
    this.amount(record, key, path);
  }

  oneOf(record: Fields, key: string, path: string, allowed: ReadonlySet<string>): string {
    const value = this.field(record, key);
    if (typeof value !== 'string' || !allowed.has(value))
      this.fail(`${path}.${key}`, `must be one of ${[...allowed].join(', ')}; got ${describe(value)}`);
    return value;
  }

  /** A complete conversation: every tool call answered. */
  history(value: unknown, path: string): void {
    const history = this.array(value, path);
    try {
      validateHistory(history);
    } catch (error) {
      if (error instanceof HistoryValidationError)
        this.fail(path, `is not a valid conversation: ${error.issues.map(issueText).join('; ')}`);
      throw error;
    }
  }

  /** What a user sent: text, or an array of content parts. */
  input(value: unknown, path: string): void {
    if (typeof value === 'string') return;
    const parts = this.array(value, path);
    for (const [index, part] of parts.entries()) {
      const at = `${path}[${index}]`;
      const record = this.object(part, at);
      const type = this.oneOf(record, 'type', at, partTypes);
      if (type === 'text') this.string(record, 'text', at);
      else if (this.field(record, 'url') !== undefined) this.string(record, 'url', at);
      else {
        this.string(record, 'data', at);
        this.string(record, 'mediaType', at);
      }
    }
  }

  usage(value: unknown, path: string): void {
    const usage = this.object(value, path);
    for (const key of usageFields) this.amount(usage, key, path);
  }

  /** Counts by name (calls per tool, calls per signature): an object of non-negative integers. */
  counts(value: unknown, path: string): void {
    const counts = this.object(value, path);
    for (const key of Object.keys(counts)) this.count(counts, key, path);
  }

  toolCall(value: unknown, path: string): ToolCall {
    const call = this.object(value, path);
    this.name(call, 'id', path);
    this.name(call, 'name', path);
    if (!Object.hasOwn(call, 'args')) this.fail(`${path}.args`, 'is missing');
    return call as unknown as ToolCall;
  }

  toolCalls(value: unknown, path: string): ToolCall[] {
    return this.array(value, path).map((call, index) => this.toolCall(call, `${path}[${index}]`));
  }

  checkpoint(value: unknown, path: string): void {
    const checkpoint = this.object(value, path);
    this.oneOf(checkpoint, 'phase', path, phases);
    for (const key of ['step', 'modelCalls', 'toolCallsRun']) this.count(checkpoint, key, path);
    // Written by every checkpoint; a runtime resuming from one without them uses 0 / false / null.
    if (this.field(checkpoint, 'retryCount') !== undefined) this.count(checkpoint, 'retryCount', path);
    // true or false, or the limit at which the last answer was asked for.
    const forced = this.field(checkpoint, 'forcedFinalAnswer');
    if (forced !== undefined && typeof forced !== 'boolean')
      this.oneOf(checkpoint, 'forcedFinalAnswer', path, forcedAnswerLimits);
    this.counts(this.field(checkpoint, 'toolCallCounts'), `${path}.toolCallCounts`);
    this.counts(this.field(checkpoint, 'callSignatures'), `${path}.callSignatures`);
    const degraded = this.array(this.field(checkpoint, 'degradedTools'), `${path}.degradedTools`);
    for (const [index, name] of degraded.entries())
      if (typeof name !== 'string')
        this.fail(`${path}.degradedTools[${index}]`, `must be a string; got ${describe(name)}`);
    this.usage(this.field(checkpoint, 'usage'), `${path}.usage`);
    // What agents used as tools and MCP sampling spent; a checkpoint without it resumes with none.
    const nested = this.field(this.object(this.field(checkpoint, 'usage'), `${path}.usage`), 'nested');
    if (nested !== undefined) {
      const spend = this.object(nested, `${path}.usage.nested`);
      this.usage(this.field(spend, 'usage'), `${path}.usage.nested.usage`);
      this.count(spend, 'modelCalls', `${path}.usage.nested`);
    }
    const openCalls = this.toolCalls(this.field(checkpoint, 'openCalls'), `${path}.openCalls`);
    this.decision(this.field(checkpoint, 'decision'), `${path}.decision`);
    const approvals = this.field(checkpoint, 'approvals');
    if (approvals !== undefined && approvals !== null) this.approvalState(approvals, `${path}.approvals`);
    // The open calls are legitimately unanswered: answer them, and what is left must be a complete conversation
    // (an orphan tool message, or an open call the checkpoint does not list, is damage).
    const history = this.array(this.field(checkpoint, 'history'), `${path}.history`);
    this.history(
      openCalls.length === 0 ? history : [...history, ...answerUnrunCalls(openCalls, 'open')],
      `${path}.history`,
    );
  }

  decision(value: unknown, path: string): void {
    if (value === null) return;
    const decision = this.object(value, path);
    const kind = this.oneOf(decision, 'kind', path, decisionKinds);
    if (kind === 'continue_with_tools') this.toolCalls(this.field(decision, 'calls'), `${path}.calls`);
    else if (kind === 'terminate_with_output') {
      this.string(decision, 'text', path);
      this.boolean(decision, 'truncated', path);
    } else if (kind === 'terminate') {
      this.oneOf(decision, 'reason', path, knownStopReasons);
      this.string(decision, 'message', path);
    }
  }

  approvalState(value: unknown, path: string): void {
    const state = this.object(value, path);
    for (const [index, item] of this.array(this.field(state, 'pending'), `${path}.pending`).entries()) {
      const pending = this.object(item, `${path}.pending[${index}]`);
      this.name(pending, 'callId', `${path}.pending[${index}]`);
      this.oneOf(pending, 'kind', `${path}.pending[${index}]`, requestKinds);
    }
    for (const [index, item] of this.array(this.field(state, 'decided'), `${path}.decided`).entries()) {
      const decided = this.object(item, `${path}.decided[${index}]`);
      this.name(decided, 'callId', `${path}.decided[${index}]`);
      this.approvalDecision(this.field(decided, 'decision'), `${path}.decided[${index}].decision`);
    }
  }

  approvalDecision(value: unknown, path: string): string {
    const decision = this.object(value, path);
    const type = this.oneOf(decision, 'type', path, decisionTypes);
    if (type === 'reject') this.string(decision, 'reason', path);
    if (type === 'answer') this.string(decision, 'text', path);
    return type;
  }

  approval(value: unknown, path: string): void {
    const record = this.object(value, path);
    this.string(record, 'sessionId', path);
    this.name(record, 'callId', path);
    this.string(record, 'agent', path);
    this.string(record, 'route', path);
    this.string(record, 'tool', path);
    if (!Object.hasOwn(record, 'args')) this.fail(`${path}.args`, 'is missing');
    this.oneOf(record, 'kind', path, requestKinds);
    this.optionalString(record, 'question', path);
    this.time(record, 'requestedAt', path);
    const status = this.oneOf(record, 'status', path, knownApprovalStatuses);
    const decision = this.field(record, 'decision');
    if (status === 'pending') {
      if (decision !== undefined) this.fail(`${path}.decision`, 'is set, but the approval is pending');
      return;
    }
    if (decision === undefined) this.fail(`${path}.decision`, `is missing, but the approval is ${status}`);
    const type = this.approvalDecision(decision, `${path}.decision`);
    // A withdrawn request holds the rejection its agent got.
    if (decisionStatus.get(type) !== status && !(status === 'withdrawn' && type === 'reject'))
      this.fail(`${path}.decision`, `is "${type}", which does not give the status "${status}"`);
    this.optionalAmount(record, 'decidedAt', path);
  }

  turn(value: unknown, path: string): void {
    if (value === null) return;
    const turn = this.object(value, path);
    if (this.count(turn, 'number', path) < 1) this.fail(`${path}.number`, 'must be 1 or more');
    this.input(this.field(turn, 'input'), `${path}.input`);
    this.restore(this.field(turn, 'session'), `${path}.session`);
    const agent = this.field(turn, 'agent');
    if (agent === null) return;
    const held = this.object(agent, `${path}.agent`);
    this.name(held, 'name', `${path}.agent`);
    this.count(held, 'segment', `${path}.agent`);
    this.checkpoint(this.field(held, 'checkpoint'), `${path}.agent.checkpoint`);
  }

  /**
   * The row's names and counters agree with its turn: the turn is the one after the finished ones, held by the row's
   * agent, which ends the turn's handoff path and owns the agent checkpoint (same name, same segment).
   */
  heldBy(turn: Fields, agent: string, turns: number): void {
    if (turn.number !== turns + 1)
      this.fail('session.turn.number', `is ${String(turn.number)}, but the session finished ${turns} turns`);
    const restore = turn.session as Fields;
    if (restore.current !== agent)
      this.fail(
        'session.turn.session.current',
        `is "${String(restore.current)}", but the session's agent is "${agent}"`,
      );
    const path = restore.path as unknown[];
    if (path.length === 0 || path.at(-1) !== agent)
      this.fail('session.turn.session.path', `does not end with the session's agent "${agent}"`);
    const held = turn.agent as Fields | null;
    if (held === null) return;
    if (held.name !== agent)
      this.fail(
        'session.turn.agent.name',
        `is "${String(held.name)}", but the session's agent is "${agent}"`,
      );
    if (held.segment !== restore.segment)
      this.fail(
        'session.turn.agent.segment',
        `is ${String(held.segment)}, but the session is in segment ${String(restore.segment)}`,
      );
  }

  /** The session around the agent when the checkpoint was taken. */
  restore(value: unknown, path: string): void {
    const restore = this.object(value, path);
    this.name(restore, 'current', path);
    const transcript = this.field(restore, 'transcript');
    this.history(transcript, `${path}.transcript`);
    if (this.count(restore, 'turnStart', path) > (transcript as unknown[]).length)
      this.fail(`${path}.turnStart`, 'points past the end of the transcript');
    const agentHistory = this.field(restore, 'agentHistory');
    this.history(agentHistory, `${path}.agentHistory`);
    if (this.count(restore, 'agentBase', path) > (agentHistory as unknown[]).length)
      this.fail(`${path}.agentBase`, "points past the end of the agent's history");
    const agentPath = this.array(this.field(restore, 'path'), `${path}.path`);
    for (const [index, name] of agentPath.entries())
      if (typeof name !== 'string')
        this.fail(`${path}.path[${index}]`, `must be a string; got ${describe(name)}`);
    this.count(restore, 'refusals', path);
    this.count(restore, 'segment', path);
    const spent = this.object(this.field(restore, 'spent'), `${path}.spent`);
    this.usage(this.field(spent, 'usage'), `${path}.spent.usage`);
    this.count(spent, 'modelCalls', `${path}.spent`);
    this.count(spent, 'toolCallsRun', `${path}.spent`);
  }

  options(value: unknown, path: string): void {
    const options = this.object(value, path);
    this.count(options, 'maxHandoffDepth', path);
    this.count(options, 'maxHandoffRevisits', path);
    const supervision = this.object(this.field(options, 'supervision'), `${path}.supervision`);
    this.oneOf(supervision, 'strategy', `${path}.supervision`, strategies);
    this.count(supervision, 'maxRestarts', `${path}.supervision`);
    this.oneOf(supervision, 'onExhausted', `${path}.supervision`, exhaustedActions);
    for (const key of ['backoffMs', 'backoffFactor', 'maxBackoffMs'])
      this.amount(supervision, key, `${path}.supervision`);
    this.optionalString(options, 'tenant', path);
    this.optionalString(options, 'parentScope', path);
    const budget = this.field(options, 'budget');
    if (budget === undefined) return;
    const limits = this.object(budget, `${path}.budget`);
    for (const key of ['tokens', 'usd', 'windowMs', 'warnAt'])
      this.optionalAmount(limits, key, `${path}.budget`);
  }
}

const partTypes: ReadonlySet<string> = new Set(['text', 'image']);
const decisionTypes: ReadonlySet<string> = new Set(['approve', 'reject', 'answer']);

function issueText(issue: { index: number; message: string }): string {
  return `[${issue.index}] ${issue.message}`;
}

/** A short description of an unexpected value for an error message. */
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
