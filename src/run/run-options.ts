import { runInputProblem } from '../core/content.ts';
import { ConfigError } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import type { RunInput } from '../core/messages.ts';
import { checkOptionObject, describeValue } from '../core/options.ts';
import { checkBudget } from '../resources/resource-config.ts';
import { callerOf } from './run-runtime.ts';

/**
 * The checks every public entry point (run, stream, spawn, restore, parallel) makes on its input and options
 * before anything runs: a typo or a wrong type is a ConfigError (a bad history a HistoryValidationError) at the
 * call, not a silent default or a TypeError in the middle of the run.
 */

/** Throws a ConfigError unless `input` is a string or a non-empty array of valid content parts. */
export function checkRunInput(input: unknown, where: string): asserts input is RunInput {
  const problem = runInputProblem(input);
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}.`);
}

type FieldCheck = (value: unknown, where: string, key: string) => void;

const wrong = (where: string, key: string, what: string, value: unknown): never => {
  throw new ConfigError(`${where}: ${key} must be ${what}, got ${describeValue(value)}.`);
};

const nonEmptyString: FieldCheck = (value, where, key) => {
  if (typeof value !== 'string' || value === '') wrong(where, key, 'a non-empty string', value);
};

const abortSignal: FieldCheck = (value, where, key) => {
  const signal = value as Partial<AbortSignal> | null;
  const isSignal =
    value instanceof AbortSignal ||
    (typeof signal === 'object' &&
      signal !== null &&
      typeof signal.aborted === 'boolean' &&
      typeof signal.addEventListener === 'function' &&
      typeof signal.removeEventListener === 'function');
  if (!isSignal) wrong(where, key, 'an AbortSignal (for example AbortSignal.timeout(ms))', value);
};

const history: FieldCheck = (value) => {
  validateHistory(value as readonly unknown[]);
};

const clock: FieldCheck = (value, where, key) => {
  const given = value as Record<string, unknown> | null;
  if (
    typeof given !== 'object' ||
    given === null ||
    typeof given.now !== 'function' ||
    typeof given.setTimeout !== 'function' ||
    typeof given.clearTimeout !== 'function'
  )
    wrong(where, key, 'a clock with now(), setTimeout() and clearTimeout()', value);
};

const observer: FieldCheck = (value, where, key) => {
  if (typeof value === 'function') return;
  if (typeof value === 'object' && value !== null) {
    const { next, error, complete } = value as Record<string, unknown>;
    if ([next, error, complete].every((handler) => handler === undefined || typeof handler === 'function'))
      return;
  }
  wrong(where, key, 'an inspection observer (a function or an object with next())', value);
};

const listener: FieldCheck = (value, where, key) => {
  if (typeof value !== 'function') wrong(where, key, 'a function', value);
};

const resourceManager: FieldCheck = (value, where, key) => {
  if ((value as { kind?: unknown } | null)?.kind !== 'resource-manager')
    wrong(where, key, 'a resource manager from createResourceManager()', value);
};

const budgetKeys: readonly string[] = ['tokens', 'usd', 'windowMs', 'warnAt'];

/** Its fields' values are checked by the resource manager; here its shape, and typos such as `token`. */
const budget: FieldCheck = (value, where, key) => {
  checkOptionObject(value, budgetKeys, `${where}: ${key}`);
};

const count: FieldCheck = (value, where, key) => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    wrong(where, key, 'an integer >= 0', value);
};

const supervisionKeys: readonly string[] = [
  'strategy',
  'maxRestarts',
  'onExhausted',
  'backoffMs',
  'backoffFactor',
  'maxBackoffMs',
];

/** Its fields' values are checked where the policy is resolved; here its shape, and typos. */
const supervision: FieldCheck = (value, where, key) => {
  checkOptionObject(value, supervisionKeys, `${where}: ${key}`);
};

const anyInput: FieldCheck = (value, where, key) => {
  checkRunInput(value, `${where}: ${key}`);
};

/** Masking options: an object; resolvePii checks its fields where the run or system is made. */
const piiOptions: FieldCheck = (value, where, key) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    wrong(where, key, "an object such as { kinds: ['email', 'card'] }", value);
  checkOptionObject(value, ['kinds', 'defaultCountry', 'events', 'inspector', 'model'], `${where}: ${key}`);
};

const auditLog: FieldCheck = (value, where, key) => {
  if ((value as { kind?: unknown } | null)?.kind !== 'audit-log')
    wrong(where, key, 'an audit log from createAuditLog()', value);
};

const runParent: FieldCheck = (value, where, key) => {
  if (callerOf(value as object) === undefined)
    wrong(where, key, "a tool's ctx (or a guardrail check's info) of a run in progress", value);
};

/** Any value: the run context is the caller's own (checked by its type at compile time). */
const anyValue: FieldCheck = () => undefined;

/** What each option of each entry point must be. */
const runChecks = {
  context: anyValue,
  history,
  signal: abortSignal,
  sessionId: nonEmptyString,
  clock,
  inspect: observer,
  resources: resourceManager,
  budget,
  tenant: nonEmptyString,
  parentScope: nonEmptyString,
  onApproval: listener,
  pii: piiOptions,
  audit: auditLog,
  parent: runParent,
} satisfies Record<string, FieldCheck>;

const sessionChecks = {
  context: anyValue,
  sessionId: nonEmptyString,
  signal: abortSignal,
  history,
  maxHandoffDepth: count,
  maxHandoffRevisits: count,
  supervision,
  budget,
  tenant: nonEmptyString,
  parentScope: nonEmptyString,
} satisfies Record<string, FieldCheck>;

const { sessionId: _sessionId, history: _history, ...restoreBase } = sessionChecks;
const takeOver: FieldCheck = (value, where, key) => {
  if (typeof value !== 'boolean') wrong(where, key, 'true or false', value);
};
const restoreChecks = { ...restoreBase, input: anyInput, takeOver } satisfies Record<string, FieldCheck>;

const parallelChecks = {
  context: anyValue,
  signal: abortSignal,
  history,
  clock,
  inspect: observer,
  onEvent: listener,
  resources: resourceManager,
  budget,
  tenant: nonEmptyString,
  parentScope: nonEmptyString,
  onApproval: listener,
  pii: piiOptions,
  audit: auditLog,
  parent: runParent,
} satisfies Record<string, FieldCheck>;

const storeLike: FieldCheck = (value, where, key) => {
  const store = value as Record<string, unknown> | null;
  const methods = ['load', 'commit', 'readEvents', 'list', 'approvals', 'delete', 'close'];
  if (
    typeof store !== 'object' ||
    store === null ||
    methods.some((name) => typeof store[name] !== 'function')
  )
    wrong(where, key, 'a session store (createSqliteStore(path) or createMemoryStore())', value);
};

const positiveNumber: FieldCheck = (value, where, key) => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    wrong(where, key, 'a number > 0', value);
};

const agentList: FieldCheck = (value, where, key) => {
  if (!Array.isArray(value)) wrong(where, key, 'an array of agents from defineAgent()', value);
};

/** A manager, or the configuration to create one (which createResourceManager checks). */
const resourcesOrConfig: FieldCheck = (value, where, key) => {
  if (typeof value !== 'object' || value === null)
    wrong(where, key, 'a resource manager or its configuration', value);
};

const systemChecks = {
  inspect: observer,
  store: storeLike,
  approvalPollMs: positiveNumber,
  maxBufferedEvents: positiveNumber,
  agents: agentList,
  supervision,
  clock,
  resources: resourcesOrConfig,
  pii: piiOptions,
  audit: auditLog,
} satisfies Record<string, FieldCheck>;

function checkOptions(options: unknown, checks: Record<string, FieldCheck>, where: string): void {
  if (options === undefined) return;
  checkOptionObject(options, Object.keys(checks), `${where}: options`);
  for (const key of Object.keys(options)) {
    const value = options[key];
    if (value !== undefined) checks[key]?.(value, where, key);
  }
}

/** The options of run() and stream(). */
export function checkRunOptions(options: unknown, where: string): void {
  checkOptions(options, runChecks, where);
}

/** Everything run() and stream() are given: an agent, an input and options. */
export function checkRunArguments(agent: unknown, input: unknown, options: unknown, where: string): void {
  if ((agent as { kind?: unknown } | null)?.kind !== 'agent')
    throw new ConfigError(`${where}: the first argument must be an agent from defineAgent().`);
  checkRunInput(input, where);
  checkRunOptions(options, where);
}

/** The options of spawn(). */
export function checkSessionOptions(options: unknown, where: string): void {
  checkOptions(options, sessionChecks, where);
}

const turnBudget: FieldCheck = (value, where, key) => {
  checkOptionObject(value, ['tokens', 'usd', 'warnAt'], `${where}: ${key}`);
  checkBudget(value, `${where}: ${key}`);
};

const positiveMilliseconds: FieldCheck = (value, where, key) => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    wrong(where, key, 'a positive number of milliseconds', value);
};

/** The options of session.send(): a turn's signal, timeout and budget. */
export function checkTurnOptions(options: unknown, where: string): void {
  checkOptions(
    options,
    { context: anyValue, signal: abortSignal, timeoutMs: positiveMilliseconds, budget: turnBudget },
    where,
  );
}

/** The options of a system's restore(). */
export function checkRestoreOptions(options: unknown, where: string): void {
  checkOptions(options, restoreChecks, where);
}

/** The options of createAgentSystem(). */
export function checkSystemOptions(options: unknown, where: string): void {
  checkOptions(options, systemChecks, where);
}

/** The options of parallel(agents, options): an object with `merge`. */
export function checkParallelOptions(options: unknown, where: string): void {
  checkOptionObject(options, ['merge'], `${where}: options`);
}

/** The options of parallel(...).run(). */
export function checkParallelRunOptions(options: unknown, where: string): void {
  checkOptions(options, parallelChecks, where);
}
