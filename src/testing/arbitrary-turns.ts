import type { z } from 'zod';
import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import { zod } from '../core/zod.ts';
import { toJsonSchema } from '../tools/tool.ts';
import { fastCheck } from './fast-check.ts';
import type { Arbitrary } from './fast-check-types.ts';
import { arbitraryFromSchema, wrongArguments } from './schema-values.ts';
import type { ScriptedTurn } from './scripted-model.ts';

/** The kinds of turn `arbitraryModelTurns` mixes; weight 0 leaves a kind out. */
export type TurnKind =
  /** One to three calls of the agent's tools with arguments valid for their schemas. */
  | 'toolCalls'
  /** Calls with arguments that are not JSON, have a wrong type or miss a field, or name an unknown tool. */
  | 'invalidToolCalls'
  /** The calls of an earlier tool-calling turn again, same arguments (duplicate detection, call caps). */
  | 'repeat'
  /** A text answer: JSON valid for the output schema or not, when there is one; plain text otherwise. */
  | 'answer'
  /** An empty answer: no text, no calls, no stop reason. */
  | 'empty'
  /** A refusal (`refusal` stop reason) or a content filter. */
  | 'refusal'
  /** An answer cut by `max_tokens`. */
  | 'truncated'
  /** The call fails with a ModelError of one of `errorKinds`. */
  | 'error';

/** What the tools look like to the generator: anything with a name and a JSON Schema (a `tool()`, a ToolSpec). */
export interface ToolShape {
  readonly name: string;
  readonly parameters: JsonObject;
}

export interface ModelTurnsOptions {
  /** The tools valid calls are made of (the agent's `tool()`s or their specs). Default none. */
  tools?: readonly ToolShape[] | undefined;
  /** The output schema (zod or JSON Schema) answers are made for; without one, answers are plain text. */
  output?: z.ZodType | JsonObject | undefined;
  /** Longest script. Default 8. */
  maxTurns?: number | undefined;
  /** Shortest script. Default 0 (the first call already finds the script exhausted). */
  minTurns?: number | undefined;
  /** Relative weights of the kinds of turn. Default 3 for tool calls and answers, 1 for every other kind. */
  weights?: Partial<Record<TurnKind, number>> | undefined;
  /** The ModelError kinds of `error` turns. Default rate_limited, overloaded, server, timeout, network, truncated_stream. */
  errorKinds?: readonly ModelErrorKind[] | undefined;
  /** Longest delay before a turn answers, in milliseconds (some turns wait 1 ms up to this). Default 2. */
  maxDelayMs?: number | undefined;
}

const defaultWeights: Record<TurnKind, number> = {
  toolCalls: 3,
  invalidToolCalls: 1,
  repeat: 1,
  answer: 3,
  empty: 1,
  refusal: 1,
  truncated: 1,
  error: 1,
};

const defaultErrorKinds: readonly ModelErrorKind[] = [
  'rate_limited',
  'overloaded',
  'server',
  'timeout',
  'network',
  'truncated_stream',
];

/** A generated turn before repeats are resolved: `repeat` names an earlier tool-calling turn. */
type TurnPlan = { turn: ScriptedTurn } | { repeat: number; delayMs: number | undefined };

/**
 * A fast-check arbitrary of model scripts for `scriptedModel(turns)`: what a model might do to your agent, from
 * the sensible (valid tool calls built from each tool's JSON Schema, answers that decode) to the hostile (bad
 * JSON arguments, wrong types, unknown tools, repeated calls, refusals, truncations, provider errors, empty
 * answers, small delays). fast-check shrinks a failing script to a small one. Needs fast-check installed.
 */
export function arbitraryModelTurns(options: ModelTurnsOptions = {}): Arbitrary<ScriptedTurn[]> {
  const fc = fastCheck('arbitraryModelTurns()');
  const tools = options.tools ?? [];
  const weights = { ...defaultWeights, ...options.weights };
  if (tools.length === 0) {
    weights.toolCalls = 0;
    weights.repeat = 0;
  }
  const outputSchema = outputJsonSchema(options.output);
  const maxDelay = options.maxDelayMs ?? 2;
  // An option shrinks to no delay at all: a failing script keeps only the delays it needs.
  const delay =
    maxDelay > 0
      ? fc.option(fc.integer({ min: 1, max: maxDelay }), { nil: undefined, freq: 5 })
      : fc.constant(undefined);

  const validCalls = tools.map((shape) =>
    arbitraryFromSchema(shape.parameters).map((args) => ({ name: shape.name, args })),
  );
  const invalidCall = fc.oneof(
    fc.constant({ name: 'no_such_tool', args: {} as JsonValue }),
    ...tools.flatMap((shape) => {
      const wrong = wrongArguments(shape.parameters);
      return [
        fc.constant({ name: shape.name, args: '{"unterminated": ' as JsonValue }),
        ...(wrong ? [fc.constant({ name: shape.name, args: wrong as JsonValue })] : []),
      ];
    }),
  );
  const toolStop = fc.constantFrom<ScriptedTurn['stopReason']>('tool_use', undefined);
  const answerText = outputSchema
    ? fc.oneof(
        { arbitrary: arbitraryFromSchema(outputSchema).map((value) => JSON.stringify(value)), weight: 3 },
        { arbitrary: fc.constantFrom('not json', '{"unexpected": true}', '```json\n{}\n```'), weight: 1 },
      )
    : fc.constantFrom('Done.', 'Here is what I found.', '42');

  const plans: { arbitrary: Arbitrary<TurnPlan>; weight: number }[] = [
    {
      weight: weights.toolCalls,
      arbitrary: fc
        .record({
          calls: fc.array(validCalls.length > 0 ? fc.oneof(...validCalls) : invalidCall, {
            minLength: 1,
            maxLength: 3,
          }),
          stopReason: toolStop,
          delayMs: delay,
        })
        .map(({ calls, stopReason, delayMs }) => ({ turn: turn({ toolCalls: calls, stopReason, delayMs }) })),
    },
    {
      weight: weights.invalidToolCalls,
      arbitrary: fc
        .record({
          calls: fc.array(fc.oneof(invalidCall, ...validCalls), {
            minLength: 1,
            maxLength: 2,
          }),
          stopReason: toolStop,
          delayMs: delay,
        })
        .map(({ calls, stopReason, delayMs }) => ({ turn: turn({ toolCalls: calls, stopReason, delayMs }) })),
    },
    {
      weight: weights.repeat,
      arbitrary: fc.record({ repeat: fc.nat({ max: 7 }), delayMs: delay }),
    },
    {
      weight: weights.answer,
      arbitrary: fc
        .record({
          text: answerText,
          stopReason: fc.constantFrom<ScriptedTurn['stopReason']>('end_turn', undefined, 'stop_sequence'),
          delayMs: delay,
        })
        .map((fields) => ({ turn: turn(fields) })),
    },
    { weight: weights.empty, arbitrary: delay.map((delayMs) => ({ turn: turn({ text: '', delayMs }) })) },
    {
      weight: weights.refusal,
      arbitrary: fc.constantFrom<TurnPlan>(
        { turn: { text: '', refusal: 'I cannot help with that.', stopReason: 'refusal' } },
        { turn: { text: '', stopReason: 'content_filter' } },
      ),
    },
    {
      weight: weights.truncated,
      arbitrary: fc
        .record({ text: fc.constantFrom('The answer is', '{"partial": '), delayMs: delay })
        .map(({ text, delayMs }) => ({ turn: turn({ text, stopReason: 'max_tokens', delayMs }) })),
    },
    {
      weight: weights.error,
      arbitrary: fc
        .constantFrom(...(options.errorKinds ?? defaultErrorKinds))
        .map((kind) => ({ turn: { error: new ModelError(kind, `scripted ${kind} error`) } })),
    },
  ];
  const chosen = plans.filter((plan) => plan.weight > 0);
  return fc
    .array(fc.oneof(...chosen), { minLength: options.minTurns ?? 0, maxLength: options.maxTurns ?? 8 })
    .map(resolveRepeats);
}

/** A turn without its undefined fields, so scripts print and compare cleanly. */
function turn(fields: ScriptedTurn): ScriptedTurn {
  const clean: ScriptedTurn = {};
  for (const [key, value] of Object.entries(fields))
    if (value !== undefined) (clean as Record<string, unknown>)[key] = value;
  return clean;
}

/** Each `repeat` becomes the calls of an earlier tool-calling turn (an empty answer when there is none yet). */
function resolveRepeats(plans: TurnPlan[]): ScriptedTurn[] {
  const turns: ScriptedTurn[] = [];
  const withCalls: ScriptedTurn[] = [];
  for (const plan of plans) {
    if ('turn' in plan) {
      turns.push(plan.turn);
      if (plan.turn.toolCalls?.length) withCalls.push(plan.turn);
      continue;
    }
    const earlier = withCalls[plan.repeat % Math.max(1, withCalls.length)];
    turns.push(
      turn({
        toolCalls: earlier?.toolCalls?.map(({ name, args }) => ({ name, args })),
        text: earlier ? undefined : '',
        stopReason: earlier ? 'tool_use' : undefined,
        delayMs: plan.delayMs,
      }),
    );
  }
  return turns;
}

function outputJsonSchema(output: ModelTurnsOptions['output']): JsonObject | undefined {
  if (output === undefined) return undefined;
  if (output instanceof zod().ZodType) return toJsonSchema(output, 'arbitraryModelTurns()', true);
  return output;
}
