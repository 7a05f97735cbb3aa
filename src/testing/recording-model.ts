import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../core/model.ts';
import {
  type Cassette,
  type CassetteInteraction,
  cassetteDeltas,
  cassetteError,
  cassetteRequest,
  cassetteResponse,
  writeCassette,
} from './cassette.ts';
import type { SecretStripOptions } from './cassette-secrets.ts';

export interface RecordingModelOptions extends SecretStripOptions {
  /** The JSON file to write; its folder is created. An existing file is replaced on the first call. */
  cassette: string;
}

/** A model that records every call of the provider it wraps into a cassette. */
export interface RecordingModel extends ModelProvider {
  /** The cassette as recorded so far (also written to the file after every call). */
  readonly cassette: Cassette;
}

/**
 * Wraps a real provider and records each call into a JSON cassette: the request (messages, tools, output schema,
 * settings), every delta it streamed, in order, and its response or error, so `replayModel(path)` can play the run
 * again offline. The file is rewritten after each call, so an interrupted test still leaves what it recorded.
 *
 * What is never written: the provider object itself (its API key, base URL, headers, client), the response's
 * `raw` payload, calls cut short by their AbortSignal (a replay could not know when to cut them), and secrets:
 * values of fields named like secrets and secret-shaped text inside any string (see `cassetteSecretPatterns`).
 */
export function recordingModel(provider: ModelProvider, options: RecordingModelOptions): RecordingModel {
  const path = options.cassette;
  const cassette: Cassette = {
    version: 1,
    provider: provider.provider,
    model: provider.model,
    interactions: [],
  };
  const record = (interaction: CassetteInteraction) => {
    cassette.interactions.push(interaction);
    writeCassette(path, cassette);
  };
  return {
    provider: provider.provider,
    model: provider.model,
    cassette,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const stored = cassetteRequest(request, options);
      const deltas: ModelDelta[] = [];
      const onDelta = request.onDelta;
      const recordDelta = (delta: ModelDelta) => {
        deltas.push(delta);
        onDelta?.(delta);
      };
      try {
        const response = await provider.generate({ ...request, onDelta: recordDelta });
        record({
          request: stored,
          deltas: cassetteDeltas(deltas, options),
          response: cassetteResponse(response, options),
        });
        return response;
      } catch (error) {
        if (!request.signal.aborted)
          record({
            request: stored,
            deltas: cassetteDeltas(deltas, options),
            error: cassetteError(error, options),
          });
        throw error;
      }
    },
  };
}
