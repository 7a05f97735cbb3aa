/**
 * What one fuzz case is, as plain data (printable, replayable): the agents (tools, output schema, handoffs,
 * agents used as tools, limits, and a script of model behaviours), the inputs of each run or turn, the histories
 * passed in, and the options (budgets, aborts, timeouts), for run(), stream() or a session of several turns.
 * `scenarios(profile)` is the fast-check arbitrary that generates them.
 */
import fc from 'fast-check';

export type Entry = 'run' | 'stream' | 'session';

/** How a model call's tool-call id is given. */
export type IdKind =
  | 'fresh' // a new random-looking id
  | 'fixed' // the same literal every time ("call_fixed")
  | 'suffixed' // "call_fixed_2" and the like: what a renamed id looks like
  | 'dup' // the id of the previous call of the same response
  | 'empty' // ""
  | 'zero' // "0"
  | 'missing' // undefined
  | 'reuse'; // an id already in the conversation the model was sent

export type CallName =
  | 'echo'
  | 'add'
  | 'slow'
  | 'hang'
  | 'thrower'
  | 'fatal'
  | 'secret'
  | 'weird'
  | 'guarded'
  | 'ask_human'
  | 'unknown'
  | 'constructor'
  | '__proto__'
  | 'toString'
  | 'hasOwnProperty'
  | 'reserved' // react_invalid_reply, the name a ReAct strategy reserves
  | 'handoff' // transfer_to_<one of the agent's targets>
  | 'handoff_unknown' // transfer_to_<no such agent>
  | 'nested'; // the agent's agentTool

export type ArgsKind =
  | 'valid'
  | 'invalid' // an object the schema refuses
  | 'string' // a string of broken JSON instead of an object
  | 'deep' // nested arrays thousands deep
  | 'cyclic'
  | 'nonjson' // NaN, bigint, a function, a Date
  | 'missing'
  | 'null'
  | 'proto'; // own keys named __proto__ and constructor

export interface CallSpec {
  id: IdKind;
  name: CallName;
  args: ArgsKind;
  /** Picks among choices (handoff target, reused id, argument values). */
  pick: number;
}

export type TurnKind =
  | 'text'
  | 'json' // text that decodes with the output schema
  | 'badjson' // text that does not
  | 'tools'
  | 'refusal'
  | 'content_filter'
  | 'max_tokens' // cut, with text
  | 'max_tokens_empty' // cut, no text
  | 'model_error' // a ModelError
  | 'throw' // throws something that is not an Error (a string, undefined, an object)
  | 'loose' // a malformed response: wrong types everywhere
  | 'nothing' // resolves with undefined
  | 'hang'; // never answers (only with a timeout or an abort to end it)

export interface TurnSpec {
  kind: TurnKind;
  calls: CallSpec[];
  /** Text deltas streamed before answering. */
  deltas: number;
  /** Also streams reasoning and tool-call deltas. */
  extraDeltas: boolean;
  /** Milliseconds before answering (0: at once). */
  delayMs: number;
  /** Whether the delay (and a hang) ends when the call's signal is aborted. */
  honorAbort: boolean;
  /** Keeps calling onDelta for a while after the call was aborted (a provider that does not stop). */
  streamAfterAbort: boolean;
  /** Stop reason given with text or tool calls: the natural one, none, or a wrong one. */
  stopReason: 'natural' | 'none' | 'end_turn' | 'tool_use' | 'bogus';
  /** Output tokens reported (budgets count them). */
  usage: number;
  pick: number;
}

export type ToolKind =
  | 'echo'
  | 'add'
  | 'slow'
  | 'hang'
  | 'thrower'
  | 'fatal'
  | 'secret'
  | 'weird'
  | 'guarded'
  | 'ask_human';

export interface AgentSpec {
  name: string;
  tools: ToolKind[];
  output: boolean;
  /** Indexes of the agents it may hand off to. */
  handoffs: number[];
  filter: 'none' | 'lastUser' | 'empty' | 'throws' | 'garbage';
  /** Index of an agent it uses as a tool, or null. */
  nested: number | null;
  limits: {
    maxSteps: number;
    maxDecodeRetries: number;
    maxToolRetries: number;
    maxDuplicateToolCalls: number;
    maxToolCallsPerTool: number | null;
    toolTimeoutMs: number | null;
    timeoutMs: number | null;
    finalAnswerOnMaxSteps: boolean;
    toolConcurrency: number;
  };
  maxHandoffDepth: number;
  maxHandoffRevisits: number;
  script: TurnSpec[];
}

export type InputSpec =
  | 'text'
  | 'empty_text'
  | 'parts'
  | 'image'
  | 'bad_null'
  | 'bad_number'
  | 'bad_empty_parts'
  | 'bad_part'
  | 'bad_object';

export type HistorySpec =
  | 'none'
  | 'chain' // each run gets the previous run's history
  | 'bad_duplicate_id'
  | 'bad_unanswered'
  | 'bad_orphan_answer'
  | 'bad_role'
  | 'bad_not_array';

export type ApprovalMode = 'none' | 'approve' | 'reject' | 'answer' | 'throws' | 'garbage' | 'slow';

export interface TurnOptionsSpec {
  /** Abort this run (turn) after this many ms; -1: before it starts; null: never. */
  abortAfterMs: number | null;
  /** A per-turn timeout (sessions only). */
  turnTimeoutMs: number | null;
  /**
   * Start the next run before this one ended: a session queues the message; run() and stream() run side by side
   * with the same agents (without passing the history on).
   */
  sendEarly: boolean;
  /** stream(): read it through steps() instead of its events. */
  steps: boolean;
}

export interface Scenario {
  entry: Entry;
  agents: AgentSpec[];
  inputs: InputSpec[];
  turns: TurnOptionsSpec[];
  history: HistorySpec;
  budgetTokens: number | null;
  approval: ApprovalMode;
  /** An option key that does not exist (a typo). */
  badOption: boolean;
  /** Sessions: stop the session, or shut the system down, after this many ms; null: let every turn end. */
  stopAfterMs: number | null;
  shutdownMode: 'suspend' | 'drain' | 'abort';
}

/** How far a profile goes: the CLI explores more, the vitest property stays fast. */
export interface Profile {
  maxAgents: number;
  maxTurns: number;
  maxDelayMs: number;
  maxScript: number;
  /** The longest timeout, abort delay or stop delay, in milliseconds. */
  maxWaitMs: number;
}

export const cliProfile: Profile = { maxAgents: 3, maxTurns: 4, maxDelayMs: 8, maxScript: 5, maxWaitMs: 40 };
export const testProfile: Profile = { maxAgents: 3, maxTurns: 3, maxDelayMs: 2, maxScript: 4, maxWaitMs: 12 };

/** Mostly plain names; now and then one of Object.prototype's, which must be refused or work like any other. */
const agentName = fc.oneof(
  { weight: 40, arbitrary: fc.constantFrom('alpha', 'beta', 'gamma', 'a.b-c_d') },
  { weight: 1, arbitrary: fc.constantFrom('constructor', 'toString', 'hasOwnProperty', '__proto__') },
);

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  id: fc.constantFrom<IdKind>(
    'fresh',
    'fresh',
    'fixed',
    'suffixed',
    'dup',
    'empty',
    'zero',
    'missing',
    'reuse',
    'reuse',
  ),
  name: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom<CallName>('echo', 'add', 'slow', 'secret', 'handoff', 'nested') },
    {
      weight: 3,
      arbitrary: fc.constantFrom<CallName>(
        'hang',
        'thrower',
        'fatal',
        'weird',
        'guarded',
        'ask_human',
        'handoff_unknown',
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom<CallName>(
        'unknown',
        'constructor',
        '__proto__',
        'toString',
        'hasOwnProperty',
        'reserved',
      ),
    },
  ),
  args: fc.oneof(
    { weight: 8, arbitrary: fc.constant<ArgsKind>('valid') },
    {
      weight: 3,
      arbitrary: fc.constantFrom<ArgsKind>(
        'invalid',
        'string',
        'deep',
        'cyclic',
        'nonjson',
        'missing',
        'null',
        'proto',
      ),
    },
  ),
  pick: fc.nat({ max: 1000 }),
});

function turnSpec(profile: Profile): fc.Arbitrary<TurnSpec> {
  return fc.record({
    kind: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom<TurnKind>('text', 'json', 'tools', 'tools', 'tools') },
      { weight: 2, arbitrary: fc.constantFrom<TurnKind>('badjson', 'refusal', 'max_tokens', 'model_error') },
      {
        weight: 2,
        arbitrary: fc.constantFrom<TurnKind>(
          'content_filter',
          'max_tokens_empty',
          'throw',
          'loose',
          'nothing',
          'hang',
        ),
      },
    ),
    calls: fc.array(callSpec, { minLength: 1, maxLength: 4 }),
    deltas: fc.nat({ max: 4 }),
    extraDeltas: fc.boolean(),
    delayMs: fc.oneof(
      { weight: 3, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.nat({ max: profile.maxDelayMs }) },
    ),
    honorAbort: fc.boolean(),
    streamAfterAbort: fc.boolean(),
    stopReason: fc.constantFrom<TurnSpec['stopReason']>(
      'natural',
      'natural',
      'natural',
      'none',
      'end_turn',
      'tool_use',
      'bogus',
    ),
    usage: fc.nat({ max: 400 }),
    pick: fc.nat({ max: 1000 }),
  });
}

function agentSpec(profile: Profile, index: number, count: number): fc.Arbitrary<AgentSpec> {
  const others = Array.from({ length: count }, (_, i) => i).filter((i) => i !== index);
  return fc.record({
    name: agentName,
    tools: fc.uniqueArray(
      fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom<ToolKind>('echo', 'add', 'slow', 'secret', 'weird') },
        {
          weight: 2,
          arbitrary: fc.constantFrom<ToolKind>('hang', 'thrower', 'fatal', 'guarded', 'ask_human'),
        },
      ),
      { maxLength: 6 },
    ),
    output: fc.boolean(),
    handoffs:
      others.length === 0 ? fc.constant([]) : fc.uniqueArray(fc.constantFrom(...others), { maxLength: 2 }),
    filter: fc.constantFrom<AgentSpec['filter']>(
      'none',
      'none',
      'lastUser',
      'lastUser',
      'empty',
      'throws',
      'garbage',
    ),
    nested:
      index + 1 < count
        ? fc.option(fc.integer({ min: index + 1, max: count - 1 }), { freq: 2 })
        : fc.constant(null),
    limits: fc.record({
      maxSteps: fc.integer({ min: 1, max: 5 }),
      maxDecodeRetries: fc.integer({ min: 0, max: 2 }),
      maxToolRetries: fc.integer({ min: 0, max: 2 }),
      maxDuplicateToolCalls: fc.integer({ min: 1, max: 3 }),
      maxToolCallsPerTool: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 4 }),
      toolTimeoutMs: fc.option(fc.integer({ min: 1, max: profile.maxWaitMs >> 1 }), { freq: 2 }),
      timeoutMs: fc.option(fc.integer({ min: 1, max: profile.maxWaitMs }), { freq: 3 }),
      finalAnswerOnMaxSteps: fc.boolean(),
      toolConcurrency: fc.integer({ min: 1, max: 8 }),
    }),
    maxHandoffDepth: fc.integer({ min: 0, max: 4 }),
    maxHandoffRevisits: fc.integer({ min: 0, max: 2 }),
    script: fc.array(turnSpec(profile), { minLength: 1, maxLength: profile.maxScript }),
  });
}

export function scenarios(profile: Profile): fc.Arbitrary<Scenario> {
  return fc
    .record({
      count: fc.integer({ min: 1, max: profile.maxAgents }),
      turnCount: fc.integer({ min: 1, max: profile.maxTurns }),
    })
    .chain(({ count, turnCount }) =>
      fc.record({
        entry: fc.constantFrom<Entry>('run', 'stream', 'session'),
        agents: fc.tuple(...Array.from({ length: count }, (_, i) => agentSpec(profile, i, count))),
        inputs: fc.array(
          fc.oneof(
            { weight: 12, arbitrary: fc.constantFrom<InputSpec>('text', 'text', 'parts', 'image') },
            {
              weight: 1,
              arbitrary: fc.constantFrom<InputSpec>(
                'empty_text',
                'bad_null',
                'bad_number',
                'bad_empty_parts',
                'bad_part',
                'bad_object',
              ),
            },
          ),
          { minLength: turnCount, maxLength: turnCount },
        ),
        turns: fc.array(
          fc.record({
            abortAfterMs: fc.option(fc.integer({ min: -1, max: profile.maxWaitMs }), { freq: 4 }),
            turnTimeoutMs: fc.option(fc.integer({ min: 1, max: profile.maxWaitMs }), { freq: 4 }),
            sendEarly: fc.boolean(),
            steps: fc.boolean(),
          }),
          { minLength: turnCount, maxLength: turnCount },
        ),
        history: fc.oneof(
          { weight: 8, arbitrary: fc.constantFrom<HistorySpec>('none', 'chain', 'chain') },
          {
            weight: 1,
            arbitrary: fc.constantFrom<HistorySpec>(
              'bad_duplicate_id',
              'bad_unanswered',
              'bad_orphan_answer',
              'bad_role',
              'bad_not_array',
            ),
          },
        ),
        budgetTokens: fc.option(fc.integer({ min: 1, max: 2_000 }), { freq: 4 }),
        approval: fc.constantFrom<ApprovalMode>(
          'approve',
          'approve',
          'reject',
          'answer',
          'throws',
          'garbage',
          'slow',
          'none',
        ),
        badOption: fc.integer({ min: 0, max: 39 }).map((roll) => roll === 0),
        stopAfterMs: fc.option(fc.integer({ min: 0, max: profile.maxWaitMs }), { freq: 3 }),
        shutdownMode: fc.constantFrom<Scenario['shutdownMode']>('suspend', 'drain', 'abort'),
      }),
    );
}
