import { type JsonValue, plainJsonProblem } from '../core/json.ts';
import type { Message, ToolCall } from '../core/messages.ts';
import { type ModelResponse, modelStopReasons } from '../core/model.ts';
import { normalizeUsage } from '../core/usage.ts';

/**
 * Defends the loop against a provider (possibly a user's own) that returns a loose response: text must be a
 * string, arguments default to {}, usage is filled in, an unrecognized stop reason becomes 'unknown', arguments that
 * are not plain JSON (a cycle, a function) become a string naming the problem, so the tool's schema rejects them and
 * the model is told.
 *
 * Tool-call ids are made unique within the conversation: a missing, empty or "0" id gets `call_<call>_<index>`
 * (`call` is the model call's number in the run), and an id already used (earlier in `history`, or earlier in this
 * response: some servers send "0" every time, some models reuse ids across turns) gets a `_2`, `_3`... suffix. The
 * new id is used for the call and for the tool message that answers it, so the provider gets both back consistent.
 */
export function normalizeResponse(
  response: ModelResponse,
  call: number,
  history: readonly Message[] = [],
  known?: HistoryIds,
): ModelResponse {
  const given = Array.isArray(response.toolCalls) ? response.toolCalls : [];
  // The set of ids in use is built only once an id collides: a fresh id is checked by scanning, which allocates
  // nothing (building the set hashed every id of the conversation at every step). The array is made at its final
  // length: it stays in the history for the rest of the run, and one grown by push keeps 16 slots or more.
  // What is read twice is read once into a local: this runs for every model call, in V8's baseline tiers for a
  // while, where every property read is an inline-cache call.
  let used: Set<string> | undefined;
  const count = given.length;
  const toolCalls = new Array<ToolCall>(count);
  for (let k = 0; k < count; k++) {
    const toolCall = given[k] as ToolCall;
    const givenId: unknown = toolCall.id;
    const raw = typeof givenId === 'string' && givenId !== '' && givenId !== '0' ? givenId : '';
    let id = raw === '' ? `call_${call}_${k}` : raw;
    if (
      used === undefined &&
      ((known ? known.has(history, id) : usedIn(history, id)) || takenBefore(toolCalls, k, id))
    ) {
      used = known ? known.setOf(history) : idsIn(history);
      for (let j = 0; j < k; j++) used.add((toolCalls[j] as ToolCall).id);
    }
    if (used !== undefined) id = uniqueId(id, used);
    toolCalls[k] = { id, name: String(toolCall.name), args: argsOf(toolCall.args) };
  }
  const givenStop = response.stopReason;
  const stopReason = givenStop === undefined || modelStopReasons.includes(givenStop) ? givenStop : 'unknown';
  const text = response.text;
  const normalized: ModelResponse = {
    text: typeof text === 'string' ? text : '',
    toolCalls,
    stopReason,
    usage: normalizeUsage(response.usage),
  };
  const { refusal, reasoning, rawStopReason } = response;
  if (refusal !== undefined) normalized.refusal = refusal;
  if (reasoning !== undefined && reasoning.length > 0) normalized.reasoning = reasoning;
  if (rawStopReason !== undefined) normalized.rawStopReason = rawStopReason;
  return normalized;
}

/**
 * The tool-call ids of one run's conversation, kept from one model call to the next: each call adds the ids of the
 * messages appended since the last, instead of scanning the whole conversation again (a scan per call of every step
 * made that check grow with the run). It relies on how a run's history changes between its model calls: messages
 * are appended, or the last one is replaced; a history that is shorter, or whose message at the last known position
 * is another object, is read again from the start. It keeps the ids and that one message, not the history (a run
 * waiting for its model holds no older copy of its conversation).
 */
export class HistoryIds {
  #length = 0;
  #last: Message | undefined;
  readonly #ids: string[] = [];

  /** Whether `history` uses the tool-call id `id`. */
  has(history: readonly Message[], id: string): boolean {
    this.#follow(history);
    return this.#ids.includes(id);
  }

  /** The ids `history` uses, in a new set. */
  setOf(history: readonly Message[]): Set<string> {
    this.#follow(history);
    return new Set(this.#ids);
  }

  #follow(history: readonly Message[]): void {
    const length = this.#length;
    const ids = this.#ids;
    let from = length;
    if (history.length < length || (length > 0 && history[length - 1] !== this.#last)) {
      from = 0;
      ids.length = 0;
    }
    for (let m = from; m < history.length; m++) addIds(ids, history[m] as Message);
    this.#length = history.length;
    this.#last = history[history.length - 1];
  }
}

function addIds(ids: string[], message: Message): void {
  if (message.role === 'assistant') {
    const calls = message.toolCalls;
    if (calls) for (let c = 0; c < calls.length; c++) ids.push((calls[c] as ToolCall).id);
  } else if (message.role === 'tool') ids.push(message.toolCallId);
}

/**
 * Whether a conversation already uses the tool-call id `id`. Indexed loops: this runs for every call of every step,
 * often before V8 has optimized it, where an iterator allocates.
 */
function usedIn(history: readonly Message[], id: string): boolean {
  for (let m = 0; m < history.length; m++) {
    const message = history[m] as Message;
    if (message.role === 'assistant') {
      const calls = message.toolCalls;
      if (calls) for (let c = 0; c < calls.length; c++) if ((calls[c] as ToolCall).id === id) return true;
    } else if (message.role === 'tool' && message.toolCallId === id) return true;
  }
  return false;
}

/** Whether one of the first `count` calls already has the id `id`. */
function takenBefore(calls: readonly ToolCall[], count: number, id: string): boolean {
  for (let j = 0; j < count; j++) if ((calls[j] as ToolCall).id === id) return true;
  return false;
}

/** The tool-call ids a conversation already uses. */
function idsIn(history: readonly Message[]): Set<string> {
  const ids = new Set<string>();
  for (const message of history) {
    if (message.role === 'assistant' && message.toolCalls)
      for (const toolCall of message.toolCalls) ids.add(toolCall.id);
    else if (message.role === 'tool') ids.add(message.toolCallId);
  }
  return ids;
}

/** `id`, or the first `id_2`, `id_3`... not in `used`; the result is added to `used`. */
function uniqueId(id: string, used: Set<string>): string {
  let unique = id;
  for (let n = 2; used.has(unique); n++) unique = `${id}_${n}`;
  used.add(unique);
  return unique;
}

function argsOf(args: unknown): JsonValue {
  if (args === undefined) return {};
  const problem = plainJsonProblem(args);
  return problem === undefined ? (args as JsonValue) : `(arguments that are not JSON: ${problem})`;
}
