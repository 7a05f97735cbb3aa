import { sleep } from '../core/abort.ts';
import { ModelError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import type { ReasoningBlock, ToolCall } from '../core/messages.ts';
import type {
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelStopReason,
} from '../core/model.ts';
import { normalizeUsage, type Usage } from '../core/usage.ts';
import { estimateRequest } from '../resources/resource-binding.ts';

/** One scripted model turn. A missing `stopReason` means the provider gave none (the loop's fallback applies). */
export interface ScriptedTurn {
  /** The turn's text; streamed as a few `delta` events (cut after whitespace) unless `deltas` says how. */
  text?: string | undefined;
  toolCalls?: { id?: string | undefined; name: string; args?: JsonValue | undefined }[] | undefined;
  stopReason?: Exclude<ModelStopReason, 'unknown'> | undefined;
  /**
   * What the call reports it used. Without it the turn reports a usage derived from the call: `input` is the
   * request's prompt at about four characters per token (messages, tool specs and output schema, counted the way
   * the resource manager estimates a prompt), `output` its own text and tool calls (names and JSON arguments) at
   * four characters per token, rounded up.
   */
  usage?: { [K in keyof Usage]?: number | undefined } | undefined;
  /** Wait this long before answering; the request's AbortSignal cuts the wait short. */
  delayMs?: number | undefined;
  /** Fail the call with this error (a string becomes a ModelError). */
  error?: string | Error | undefined;
  /** Stream the text in exactly these pieces; `text` defaults to their concatenation. */
  deltas?: string[] | undefined;
  refusal?: string | undefined;
  reasoning?: ReasoningBlock[] | undefined;
}

export type ScriptedTurns =
  | readonly ScriptedTurn[]
  | ((request: ModelRequest, index: number) => ScriptedTurn | Promise<ScriptedTurn>);

export interface ScriptedModelOptions {
  /** Model name reported on events. Default 'scripted'. */
  model?: string | undefined;
  /** Also stream each tool call's arguments as a tool-call delta. Default false. */
  streamToolCalls?: boolean | undefined;
  /** How many recent requests `requests` keeps (a long benchmark must not grow without bound). Default 1000. */
  keepRequests?: number | undefined;
  /**
   * After the last turn of an array, start again from the first, so one model can serve any number of runs (a
   * run, then a stream of the same agent). Default false: a call past the last turn fails.
   */
  loop?: boolean | undefined;
}

/** A ModelProvider that plays scripted turns; it also records what it was asked. */
export interface ScriptedModel extends ModelProvider {
  /** Number of `generate` calls so far. */
  readonly calls: number;
  /** The most recent requests, oldest first. */
  readonly requests: readonly ModelRequest[];
}

/**
 * A model for tests, examples and benchmarks: `turns` is an array (turn i answers call i) or a function of the
 * request and the call index. It implements the same interface as the real providers, so nothing in the loop knows
 * it is scripted: text is streamed as `delta` events, like a real model's. Like a real model it honours the
 * request's `settings.maxOutputTokens`: a turn whose output (its `usage.output`, or the output derived from its
 * text) is larger reports exactly that many output tokens, stops with `max_tokens`, keeps at most four characters
 * of text per token and no tool call (a call cut short has no arguments to run). Running out of turns (without `loop`)
 * fails the call with a ModelError of kind `script_exhausted`, which a run's result reports as
 * `error.code === 'model_script_exhausted'`.
 */
export function scriptedModel(turns: ScriptedTurns, options: ScriptedModelOptions = {}): ScriptedModel {
  const keep = options.keepRequests ?? 1000;
  const requests: ModelRequest[] = [];
  let calls = 0;

  const nextTurn = (request: ModelRequest, index: number): ScriptedTurn | Promise<ScriptedTurn> => {
    if (typeof turns === 'function') return turns(request, index);
    const turn = turns[options.loop === true && turns.length > 0 ? index % turns.length : index];
    if (!turn) {
      throw new ModelError(
        'script_exhausted',
        `The scripted model has ${turns.length} turn(s) and was called a ${ordinal(index + 1)} time.`,
      );
    }
    return turn;
  };

  return {
    provider: 'scripted',
    model: options.model ?? 'scripted',
    get calls() {
      return calls;
    },
    get requests() {
      return requests;
    },
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const index = calls++;
      if (keep > 0) {
        if (requests.length >= keep) requests.shift();
        requests.push(request);
      }
      const turn = await nextTurn(request, index);
      if (turn.delayMs !== undefined && turn.delayMs > 0) await sleep(turn.delayMs, request.signal);
      if (request.signal.aborted) throw request.signal.reason ?? new Error('aborted');
      if (turn.error !== undefined) {
        throw typeof turn.error === 'string' ? new ModelError('unknown', turn.error) : turn.error;
      }
      const onDelta = request.onDelta;
      const cut = cutOf(turn, request);
      if (onDelta) for (const delta of cut ? piecesOf(cut.text) : textDeltasOf(turn)) onDelta(delta);
      const toolCalls: ToolCall[] = cut
        ? []
        : (turn.toolCalls ?? []).map((call, k) => ({
            id: call.id ?? `call_${index}_${k}`,
            name: call.name,
            args: call.args ?? {},
          }));
      if (onDelta && options.streamToolCalls) {
        toolCalls.forEach((call, k) => {
          onDelta({
            type: 'tool_call',
            index: k,
            id: call.id,
            name: call.name,
            argsDelta: JSON.stringify(call.args),
          });
        });
      }
      const response: ModelResponse = cut
        ? { text: cut.text, toolCalls, stopReason: 'max_tokens', usage: cut.usage }
        : { text: textOf(turn), toolCalls, stopReason: turn.stopReason, usage: usageOf(turn, request) };
      if (turn.refusal !== undefined) response.refusal = turn.refusal;
      if (turn.reasoning !== undefined) response.reasoning = turn.reasoning;
      return response;
    },
  };
}

function textOf(turn: ScriptedTurn): string {
  return turn.text ?? turn.deltas?.join('') ?? '';
}

/** Characters per token of a derived usage (the resource manager's estimate uses the same ratio). */
const charsPerToken = 4;

/** The turn's usage: as scripted, else derived from the request and the turn's text and tool calls. */
function usageOf(turn: ScriptedTurn, request: ModelRequest): Usage {
  if (turn.usage) return normalizeUsage(turn.usage);
  let chars = textOf(turn).length;
  for (const call of turn.toolCalls ?? []) chars += call.name.length + jsonLength(call.args ?? {});
  return {
    input: estimateRequest(request).input,
    output: Math.ceil(chars / charsPerToken),
    cached: 0,
    reasoning: 0,
  };
}

/** The turn as a request's `maxOutputTokens` cuts it, or undefined when its output fits. */
function cutOf(turn: ScriptedTurn, request: ModelRequest): { text: string; usage: Usage } | undefined {
  const limit = request.settings?.maxOutputTokens;
  if (typeof limit !== 'number' || !Number.isFinite(limit) || limit < 0) return undefined;
  const usage = usageOf(turn, request);
  if (usage.output <= limit) return undefined;
  const output = Math.floor(limit);
  return {
    text: textOf(turn).slice(0, output * charsPerToken),
    usage: { ...usage, output, reasoning: Math.min(usage.reasoning, output) },
  };
}

/** The length of a value's JSON text; 0 for what JSON cannot hold (arguments nested too deep for the stack). */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

function piecesOf(text: string): ModelDelta[] {
  return textPieces(text).map((piece) => ({ type: 'text', text: piece }));
}

/** Made once per turn object: an array's turns are played again and again (benchmarks, `loop`). */
const textDeltas = new WeakMap<ScriptedTurn, readonly ModelDelta[]>();

/**
 * The text deltas a turn streams: its `deltas`, or its text cut after whitespace into at most four pieces, so a
 * listener sees text arrive in a few steps, the same way every time.
 */
function textDeltasOf(turn: ScriptedTurn): readonly ModelDelta[] {
  let deltas = textDeltas.get(turn);
  if (deltas === undefined) {
    deltas = (turn.deltas ?? textPieces(turn.text ?? '')).map((text) =>
      Object.freeze({ type: 'text' as const, text }),
    );
    textDeltas.set(turn, deltas);
  }
  return deltas;
}

const maxTextPieces = 4;

function textPieces(text: string): string[] {
  if (text === '') return [];
  const words = text.split(/(?<=\s)(?=\S)/);
  const size = Math.ceil(words.length / maxTextPieces);
  const pieces: string[] = [];
  for (let start = 0; start < words.length; start += size)
    pieces.push(words.slice(start, start + size).join(''));
  return pieces;
}

function ordinal(n: number): string {
  const suffix =
    n % 10 === 1 && n % 100 !== 11
      ? 'st'
      : n % 10 === 2 && n % 100 !== 12
        ? 'nd'
        : n % 10 === 3 && n % 100 !== 13
          ? 'rd'
          : 'th';
  return `${n}${suffix}`;
}
