import type { EventDelivery, EventFilter, EventOrigin } from '../core/event-bus.ts';
import type { RunEventData, RunEventType } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { hasCounts, type PiiCounts, type PiiMasker } from './pii-masker.ts';
import { holdFrom } from './stream-hold.ts';

/** Events without text that could hold personal data: delivered as they are. */
const plainEvents: ReadonlySet<RunEventType> = new Set<RunEventType>([
  'phase',
  'usage',
  'spend',
  'budget_warning',
  'budget_wait',
  'quota_wait',
  'run_end',
  'resumed',
  'redaction',
  'breaker',
]);

/** One stream of deltas being masked: text of one kind, from one agent's place in the session. */
interface HeldStream {
  agent: string;
  origin: EventOrigin | undefined;
  type: 'delta' | 'reasoning_delta' | 'tool_call_delta';
  index: number;
  route: string;
  held: string;
}

/**
 * An event filter that masks personal data in every event before listeners (the stream, SSE, the stored event
 * log) see it, followed by a `redaction` event with the counts when something was masked. Streamed text is held
 * back only as far as a value being written could reach (see holdFrom), and released masked with the next delta
 * or, at the latest, before the next other event of the same agent.
 */
export function maskingEventFilter(masker: PiiMasker): EventFilter {
  const streams = new Map<string, HeldStream>();

  const flush = (route: string | undefined, deliver: EventDelivery) => {
    for (const [key, stream] of streams) {
      if (route !== undefined && stream.route !== route) continue;
      streams.delete(key);
      if (stream.held === '') continue;
      const counts: PiiCounts = {};
      const text = masker.mask(stream.held, counts);
      deliverStreamed(stream, text, deliver);
      if (hasCounts(counts)) deliver(stream.agent, 'redaction', { target: 'events', counts }, stream.origin);
    }
  };

  return <T extends RunEventType>(
    agent: string,
    type: T,
    data: RunEventData[T],
    origin: EventOrigin | undefined,
    deliver: EventDelivery,
  ): void => {
    const route = origin?.route ?? agent;
    if (type === 'delta' || type === 'reasoning_delta' || type === 'tool_call_delta') {
      const streamed = data as RunEventData['delta' | 'reasoning_delta' | 'tool_call_delta'];
      const index = 'index' in streamed ? streamed.index : -1;
      const key = `${route}\u0000${type}\u0000${index}`;
      let stream = streams.get(key);
      if (!stream) {
        stream = { agent, origin, type, index, route, held: '' };
        streams.set(key, stream);
      }
      const chunk = 'argsDelta' in streamed ? streamed.argsDelta : streamed.content;
      const counts: PiiCounts = {};
      const text = release(stream, chunk, masker, counts);
      if ('argsDelta' in streamed) {
        // The delta that names a new call goes out even when its text is held: listeners learn of the call.
        if (text !== '' || streamed.callId !== undefined || streamed.name !== undefined)
          deliver(agent, type, { ...streamed, argsDelta: text } as RunEventData[T], origin);
      } else if (text !== '') deliver(agent, type, { content: text } as RunEventData[T], origin);
      if (hasCounts(counts)) deliver(agent, 'redaction', { target: 'events', counts }, origin);
      return;
    }
    if (type === 'redaction' || type === 'breaker') {
      deliver(agent, type, data, origin);
      return;
    }
    // Anything else of this agent ends its streams: what they held goes out first, in order.
    flush(type === 'run_end' && (origin?.depth ?? 0) === 0 ? undefined : route, deliver);
    if (plainEvents.has(type)) {
      deliver(agent, type, data, origin);
      return;
    }
    const counts: PiiCounts = {};
    deliver(agent, type, maskData(type, data, masker, counts), origin);
    if (hasCounts(counts)) deliver(agent, 'redaction', { target: 'events', counts }, origin);
  };
}

/** The part of `stream.held + chunk` that can go now, masked; the rest stays held. */
function release(stream: HeldStream, chunk: string, masker: PiiMasker, counts: PiiCounts): string {
  const text = stream.held + chunk;
  let cut = holdFrom(text);
  const matches = masker.find(text);
  for (const match of matches) {
    if (match.start < cut && match.end > cut) {
      cut = match.start;
      break;
    }
  }
  stream.held = text.slice(cut);
  return matches.length === 0 ? text.slice(0, cut) : masker.replace(text, matches, cut, counts);
}

function deliverStreamed(stream: HeldStream, text: string, deliver: EventDelivery): void {
  if (stream.type === 'tool_call_delta')
    deliver(stream.agent, 'tool_call_delta', { index: stream.index, argsDelta: text }, stream.origin);
  else deliver(stream.agent, stream.type, { content: text }, stream.origin);
}

function maskData<T extends RunEventType>(
  type: T,
  data: RunEventData[T],
  masker: PiiMasker,
  counts: PiiCounts,
): RunEventData[T] {
  if (type === 'tool_response') {
    const response = data as RunEventData['tool_response'];
    const content = masker.mask(response.content, counts);
    if (content === response.content) return data;
    const preview = content.length > 200 ? `${content.slice(0, 200)}…` : content;
    return { ...response, content, contentPreview: preview } as RunEventData[T];
  }
  return masker.maskJson(data as unknown as JsonValue, counts) as unknown as RunEventData[T];
}
