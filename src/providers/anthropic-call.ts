import type Anthropic from '@anthropic-ai/sdk';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { abortError } from '../core/abort.ts';
import type { ModelRequest, ModelResponse } from '../core/model.ts';
import { anthropicModelError, unreadableAnthropicEvent } from './anthropic-errors.ts';
import { toAnthropicRequest } from './anthropic-format.ts';
import { AnthropicStreamReducer } from './anthropic-stream.ts';
import type { AnthropicSdk } from './sdk-loader.ts';

/** One streamed call, no retries: the deltas go out as they come, the whole response at the end. */
export async function streamAnthropicOnce(
  sdk: AnthropicSdk,
  client: Anthropic,
  model: string,
  request: ModelRequest,
  options: { maxTokens?: number | undefined } = {},
): Promise<ModelResponse> {
  const body = toAnthropicRequest(
    request,
    model,
    options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens },
  );
  const reducer = new AnthropicStreamReducer(request.onDelta);
  let streaming = false;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.messages.create(body, { signal: request.signal });
    streaming = true;
    for await (const event of stream as AsyncIterable<RawMessageStreamEvent>) {
      try {
        reducer.push(event);
      } catch (error) {
        throw unreadableAnthropicEvent(error);
      }
    }
    // The SDK ends the iteration quietly when the signal aborts mid-stream: say so instead of "truncated".
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish();
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw anthropicModelError(error, sdk, streaming);
  }
}
