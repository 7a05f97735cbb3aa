/**
 * Type-checked under `exactOptionalPropertyTypes: true` (tsconfig.examples.json, run by `npm test`), the default of
 * `tsc --init`: every public option type must take an explicit `undefined` for each optional property, so a
 * caller can pass a value that may be missing (`{ signal: maybeSignal }`) without spreading conditionally.
 *
 * Under the project's own tsconfig the checks below hold trivially; they bite in the strict one.
 */
import {
  type AgentLimits,
  type AgentOptions,
  type AgentSystem,
  type AgentSystemOptions,
  type AgentToolOptions,
  type BudgetLimit,
  type BudgetsConfig,
  createAgentSystem,
  createResourceManager,
  defineAgent,
  type Message,
  type ModelDelta,
  type ModelPrice,
  type ModelRequest,
  type ModelResponse,
  type ModelSettings,
  type OpenRunOptions,
  type ParallelOptions,
  type ParallelRunOptions,
  parallel,
  type QuotaLimit,
  type ReasoningBlock,
  type ReservationRequest,
  type ResourceManager,
  type ResourceManagerConfig,
  type RunOptions,
  run,
  type SessionOptions,
  type Settlement,
  type SqliteStoreOptions,
  type SupervisionOptions,
  stream,
  type ToolOptions,
  tool,
} from 'troupe';
import type {
  AnthropicOptions,
  GeminiOptions,
  OpenAIChatOptions,
  OpenAICompatibleOptions,
  OpenAIResponsesOptions,
  ReactOptions,
  RetryOptions,
} from 'troupe/providers';
import { type ScriptedModelOptions, type ScriptedTurn, scriptedModel } from 'troupe/testing';
import type { InspectionEvent, Observer } from 'xstate';
import { z } from 'zod';

/** Optional keys of T. */
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

/**
 * Types that are not option bags, whose insides are not checked: schemas, agents, managers, functions, signals,
 * errors, XState's observer, and conversation data (messages and reasoning blocks, kept as providers send them).
 */
type Opaque =
  | z.ZodType
  | ((...args: never[]) => unknown)
  | { readonly kind: string }
  | AbortSignal
  | Error
  | Observer<InspectionEvent>
  | Message
  | ReasoningBlock;

/**
 * The dotted paths of optional properties that reject an explicit `undefined`, in T and the plain option objects
 * inside it (array elements included). `never` when every one accepts it.
 */
type StrictOptionalPaths<
  T,
  Path extends string = '',
  Depth extends unknown[] = [],
> = Depth['length'] extends 4
  ? never
  : T extends Opaque
    ? never
    : T extends readonly (infer Element)[]
      ? StrictOptionalPaths<Element, `${Path}[]`, [...Depth, unknown]>
      : T extends object
        ? {
            [K in keyof T & string]-?:
              | (K extends OptionalKeys<T>
                  ? { [P in K]: undefined } extends Pick<T, K>
                    ? never
                    : `${Path}${K}`
                  : never)
              | StrictOptionalPaths<Exclude<T[K], undefined>, `${Path}${K}.`, [...Depth, unknown]>;
          }[keyof T & string]
        : never;

/** Compiles only when every optional property of T takes `undefined`; otherwise the error names the paths. */
function acceptsUndefined<T>(
  _check: [StrictOptionalPaths<T>] extends [never] ? 'ok' : StrictOptionalPaths<T>,
): void {}

acceptsUndefined<RunOptions>('ok');
acceptsUndefined<SessionOptions>('ok');
acceptsUndefined<AgentSystemOptions>('ok');
acceptsUndefined<AgentOptions<z.ZodType>>('ok');
acceptsUndefined<AgentLimits>('ok');
acceptsUndefined<ModelSettings>('ok');
acceptsUndefined<ToolOptions<z.ZodType, unknown>>('ok');
acceptsUndefined<AgentToolOptions>('ok');
acceptsUndefined<ParallelOptions>('ok');
acceptsUndefined<ParallelRunOptions>('ok');
acceptsUndefined<ResourceManagerConfig>('ok');
acceptsUndefined<BudgetsConfig>('ok');
acceptsUndefined<BudgetLimit>('ok');
acceptsUndefined<QuotaLimit>('ok');
acceptsUndefined<OpenRunOptions>('ok');
acceptsUndefined<ReservationRequest>('ok');
acceptsUndefined<Settlement>('ok');
acceptsUndefined<ModelPrice>('ok');
acceptsUndefined<SupervisionOptions>('ok');
acceptsUndefined<ModelRequest>('ok');
acceptsUndefined<ModelResponse>('ok');
acceptsUndefined<ModelDelta>('ok');
acceptsUndefined<NonNullable<Parameters<AgentSystem['restore']>[2]>>('ok');
acceptsUndefined<NonNullable<Parameters<AgentSystem['usage']>[0]>>('ok');
acceptsUndefined<Parameters<ResourceManager['report429']>[0]>('ok');
acceptsUndefined<ScriptedModelOptions>('ok');
acceptsUndefined<ScriptedTurn>('ok');
acceptsUndefined<AnthropicOptions>('ok');
acceptsUndefined<GeminiOptions>('ok');
acceptsUndefined<OpenAIChatOptions>('ok');
acceptsUndefined<OpenAICompatibleOptions>('ok');
acceptsUndefined<OpenAIResponsesOptions>('ok');
acceptsUndefined<ReactOptions>('ok');
acceptsUndefined<RetryOptions>('ok');
acceptsUndefined<SqliteStoreOptions>('ok');

// The checker itself must catch a property that rejects undefined (else every line above would pass for nothing).
// @ts-expect-error `signal` takes no explicit undefined
acceptsUndefined<{ signal?: AbortSignal; name: string }>('ok');
// @ts-expect-error nested: `budget.tokens` takes no explicit undefined
acceptsUndefined<{ budget?: { tokens?: number } | undefined }>('ok');

// Everyday calls with values that may be missing.
declare const maybeSignal: AbortSignal | undefined;
declare const maybeNumber: number | undefined;
declare const maybeString: string | undefined;

const model = scriptedModel([{ text: 'hi' }], { model: maybeString, loop: undefined });
const echo = tool({
  name: 'echo',
  description: 'Echoes its input.',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
  timeoutMs: maybeNumber,
});
const agent = defineAgent({
  name: 'exact',
  instructions: 'Answer.',
  model,
  tools: [echo],
  description: maybeString,
  limits: { maxSteps: maybeNumber, timeoutMs: maybeNumber, toolTimeoutMs: undefined },
  settings: { temperature: maybeNumber },
});
export const results = [
  run(agent, 'x', { signal: maybeSignal, sessionId: maybeString, budget: { tokens: maybeNumber } }),
  stream(agent, 'x', { signal: maybeSignal, tenant: maybeString }).result,
  parallel([agent], { merge: 'vote' }).run('x', { signal: maybeSignal }),
];
export const system = createAgentSystem({
  store: undefined,
  supervision: { maxRestarts: maybeNumber },
  resources: createResourceManager({
    concurrency: maybeNumber,
    budgets: { perRun: { tokens: maybeNumber } },
  }),
});
export const session = system.spawn(agent, 'x', { sessionId: maybeString, signal: maybeSignal });
