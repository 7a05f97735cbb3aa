import type { EventBus } from '../core/event-bus.ts';
import type { JsonValue } from '../core/json.ts';
import type { ContentPart, Message } from '../core/messages.ts';
import type { ModelResponse } from '../core/model.ts';
import { maskingEventFilter } from './event-masking.ts';
import { type PiiCounts, PiiMasker } from './pii-masker.ts';
import type { ResolvedPii } from './pii-options.ts';

/** Masking for one run or session: its options and its masker (the placeholders made so far). */
export interface PiiRun {
  options: ResolvedPii;
  masker: PiiMasker;
  /** Masked copies of the conversation's messages (messages are immutable: each is masked once). */
  maskedMessages: WeakMap<Message, Message>;
}

const runs = new WeakMap<EventBus, PiiRun>();

/**
 * Turns masking on for everything that goes through `bus` (one run's or one session's): its events are masked
 * before listeners and the stored log see them, and its model calls find the masker here.
 */
export function attachPii(bus: EventBus, options: ResolvedPii | undefined): PiiRun | undefined {
  if (!options) return undefined;
  const masker = new PiiMasker({ kinds: options.kinds, defaultCountry: options.defaultCountry });
  const run: PiiRun = { options, masker, maskedMessages: new WeakMap() };
  runs.set(bus, run);
  if (options.events) bus.setFilter(maskingEventFilter(masker));
  return run;
}

/** The masking of the run or session that owns `bus`, if it has any. */
export function piiOf(bus: EventBus): PiiRun | undefined {
  return runs.get(bus);
}

/** The messages as the model may see them: every text masked (images are left as they are). */
export function maskMessages(run: PiiRun, messages: readonly Message[], counts: PiiCounts): Message[] {
  return messages.map((message) => {
    let masked = run.maskedMessages.get(message);
    if (!masked) {
      masked = maskMessage(run.masker, message, counts);
      run.maskedMessages.set(message, masked);
    }
    return masked;
  });
}

function maskMessage(masker: PiiMasker, message: Message, counts: PiiCounts): Message {
  switch (message.role) {
    case 'system':
    case 'tool':
      return { ...message, content: masker.mask(message.content, counts) };
    case 'user':
      return {
        ...message,
        content:
          typeof message.content === 'string'
            ? masker.mask(message.content, counts)
            : message.content.map(
                (part): ContentPart =>
                  part.type === 'text' ? { ...part, text: masker.mask(part.text, counts) } : part,
              ),
      };
    case 'assistant': {
      const masked = { ...message, content: masker.mask(message.content, counts) };
      if (message.toolCalls)
        masked.toolCalls = message.toolCalls.map((call) => ({
          ...call,
          args: masker.maskJson(call.args, counts),
        }));
      return masked;
    }
  }
}

/**
 * The model's response with the placeholders it wrote turned back into real values: tools get real arguments,
 * and the conversation, the result and the store hold what the user and tools said (masking it again for the next
 * request gives the same placeholders).
 */
export function revealResponse(run: PiiRun, response: ModelResponse): ModelResponse {
  const { masker } = run;
  const revealed: ModelResponse = { ...response, text: masker.reveal(response.text) };
  if (response.toolCalls.length > 0)
    revealed.toolCalls = response.toolCalls.map((call) => ({
      ...call,
      args: masker.revealJson(call.args as JsonValue),
    }));
  if (response.refusal !== undefined) revealed.refusal = masker.reveal(response.refusal);
  return revealed;
}

/**
 * An agent used as a tool by a plain run runs on a bus of its own: it shares its caller's masker, so placeholders
 * agree, while its events are masked once, where the caller forwards them.
 */
export function lendPii(bus: EventBus, run: PiiRun): void {
  runs.set(bus, { ...run, options: { ...run.options, events: false } });
}

/**
 * The masking function for the inspector: every string of every snapshot goes through it, and a snapshot repeats
 * the conversation, so results are remembered (a bounded cache; the masker keeps placeholders stable anyway).
 */
export function inspectorMasking(run: PiiRun | undefined): ((text: string) => string) | undefined {
  if (!run?.options.inspector) return undefined;
  const seen = new Map<string, string>();
  return (text) => {
    if (text.length < 6) return text;
    let masked = seen.get(text);
    if (masked === undefined) {
      masked = run.masker.mask(text);
      if (seen.size >= 10_000) seen.clear();
      seen.set(text, masked);
    }
    return masked;
  };
}
