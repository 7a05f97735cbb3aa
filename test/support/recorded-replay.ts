import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Helpers to replay the recorded transcripts of ../shared/fixtures/wire (read in place, never copied) through
 * the official SDKs. Our adapters always stream, so recorded NON-streaming responses are turned into the stream
 * events the same API would have sent for them (one content block or item per event, whole); those conversions
 * are marked "derived" in the tests that use them. Streaming recordings are replayed byte for byte.
 */

export function readText(dir: string, path: string): string {
  return readFileSync(join(dir, path), 'utf8');
}

export function readJson(dir: string, path: string): unknown {
  return JSON.parse(readText(dir, path));
}

export function exists(dir: string, path: string): boolean {
  return existsSync(join(dir, path));
}

type Json = Record<string, unknown>;

/** A recorded Anthropic Message (non-streaming body) as the SSE events the streaming API sends for it. */
export function anthropicMessageToSse(message: Json): string[] {
  const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}`;
  const usage = (message.usage ?? {}) as Json;
  const frames = [
    frame('message_start', {
      type: 'message_start',
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
  ];
  const content = (message.content ?? []) as Json[];
  content.forEach((block, index) => {
    if (block.type === 'text') {
      frames.push(
        frame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '' },
        }),
      );
      frames.push(
        frame('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'text_delta', text: block.text },
        }),
      );
    } else if (block.type === 'thinking') {
      frames.push(
        frame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        }),
      );
      frames.push(
        frame('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'thinking_delta', thinking: block.thinking },
        }),
      );
      frames.push(
        frame('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'signature_delta', signature: block.signature },
        }),
      );
    } else if (block.type === 'tool_use') {
      frames.push(
        frame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { ...block, input: {} },
        }),
      );
      frames.push(
        frame('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
        }),
      );
    } else {
      frames.push(frame('content_block_start', { type: 'content_block_start', index, content_block: block }));
    }
    frames.push(frame('content_block_stop', { type: 'content_block_stop', index }));
  });
  frames.push(
    frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence ?? null },
      usage,
    }),
  );
  frames.push(frame('message_stop', { type: 'message_stop' }));
  return frames;
}

/** A recorded Responses object (non-streaming body) as the SSE events the streaming API sends for it. */
export function responsesObjectToSse(response: Json): string[] {
  let sequenceNumber = 0;
  const frame = (data: Json) =>
    `event: ${String(data.type)}\ndata: ${JSON.stringify({ ...data, sequence_number: sequenceNumber++ })}`;
  const output = (response.output ?? []) as Json[];
  const frames = [
    frame({ type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }),
  ];
  output.forEach((item, outputIndex) => {
    frames.push(frame({ type: 'response.output_item.added', item, output_index: outputIndex }));
    if (item.type === 'message') {
      for (const part of (item.content ?? []) as Json[]) {
        if (part.type === 'output_text') {
          frames.push(
            frame({
              type: 'response.output_text.delta',
              delta: part.text,
              item_id: item.id,
              output_index: outputIndex,
              content_index: 0,
            }),
          );
        }
      }
    }
    frames.push(frame({ type: 'response.output_item.done', item, output_index: outputIndex }));
  });
  frames.push(frame({ type: `response.${String(response.status ?? 'completed')}`, response }));
  return frames;
}

/** A `streamGenerateContent` body without alt=sse (a JSON array of chunks) as `?alt=sse` frames. */
export function jsonArrayToSse(chunks: unknown[]): string[] {
  return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}`);
}

/** JSON-lines chunks (vercel/ai `*.chunks.txt`) as `?alt=sse` frames. */
export function jsonLinesToSse(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => `data: ${line}`);
}

/** snake_case keys to camelCase at every depth (the Gemini API accepts both; the SDK writes camelCase). */
export function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelKeys);
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())] = camelKeys(inner);
  }
  return out;
}
