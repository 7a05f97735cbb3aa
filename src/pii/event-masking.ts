import type { EventDelivery, EventFilter, EventOrigin } from '../core/event-bus.ts';
import type { RunEventData, RunEventType } from '../core/events.ts';
import { hasCounts, type PiiCounts, type PiiMasker } from './pii-masker.ts';

/** One stream of deltas being masked: text of one kind, from one agent's place in the session. */
interface HeldStream {
  agent: string;
  origin: EventOrigin | undefined;
  type: 'delta' | 'reasoning_delta' | 'tool_call_delta';
  index: number;
  route: string;
  held: string;
}

/** How much of a tool result's masked content its preview shows. */
const previewLength = 200;

/**
 * An event filter that masks personal data in every event before listeners (the stream, SSE, the stored event
 * log) see it, followed by a `redaction` event with the counts when something was masked. Every string and every
 * object key of every event's data is masked, whatever its type. Streamed text is held back only as far as a value
 * still being written could reach (each detector says how far), and released masked with the next delta or, at the
 * latest, before the next other event of the same agent.
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
      const counts: PiiCounts = {};
      if ('argsDelta' in streamed) {
        const text = release(stream, streamed.argsDelta, masker, counts);
        // The delta that names a new call goes out even when its text is held: listeners learn of the call.
        if (text !== '' || streamed.callId !== undefined || streamed.name !== undefined) {
          const masked = masker.maskDeep({ ...streamed, argsDelta: '' }, counts) as typeof streamed;
          deliver(agent, type, { ...masked, argsDelta: text } as RunEventData[T], origin);
        }
      } else {
        const text = release(stream, streamed.content, masker, counts);
        if (text !== '') deliver(agent, type, { content: text } as RunEventData[T], origin);
      }
      if (hasCounts(counts)) deliver(agent, 'redaction', { target: 'events', counts }, origin);
      return;
    }
    if (type === 'redaction') {
      // Counts this filter or model masking made: kind names and numbers, masked all the same.
      deliver(agent, type, masker.maskDeep(data) as RunEventData[T], origin);
      return;
    }
    // Anything else of this agent ends its streams: what they held goes out first, in order.
    if (type !== 'breaker')
      flush(type === 'run_end' && (origin?.depth ?? 0) === 0 ? undefined : route, deliver);
    const counts: PiiCounts = {};
    deliver(agent, type, maskData(type, data, masker, counts), origin);
    if (hasCounts(counts)) deliver(agent, 'redaction', { target: 'events', counts }, origin);
  };
}

/** The part of `stream.held + chunk` that can go now, masked; the rest stays held. */
function release(stream: HeldStream, chunk: string, masker: PiiMasker, counts: PiiCounts): string {
  const text = stream.held + chunk;
  const { matches, pendingFrom } = masker.scan(text);
  let cut = pendingFrom;
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

/**
 * Every string and key of the data masked. A tool result's preview is cut from its masked content (masking a cut
 * preview could miss a value the cut splits).
 */
function maskData<T extends RunEventType>(
  type: T,
  data: RunEventData[T],
  masker: PiiMasker,
  counts: PiiCounts,
): RunEventData[T] {
  if (type === 'tool_response') {
    const response = data as RunEventData['tool_response'];
    const { contentPreview: _preview, ...rest } = response;
    const masked = masker.maskDeep(rest, counts) as Omit<RunEventData['tool_response'], 'contentPreview'>;
    if (masked === rest) return data;
    const preview =
      masked.content.length > previewLength ? `${masked.content.slice(0, previewLength)}…` : masked.content;
    return { ...masked, contentPreview: preview } as RunEventData[T];
  }
  return masker.maskDeep(data, counts) as RunEventData[T];
}
