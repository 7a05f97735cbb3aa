import type { ModelProvider, ModelRequest, ModelResponse } from '../core/model.ts';
import {
  type Cassette,
  type CassetteInteraction,
  CassetteMismatchError,
  cassetteRequest,
  checkCassette,
  errorFromCassette,
  readCassette,
} from './cassette.ts';
import type { SecretStripOptions } from './cassette-secrets.ts';
import { jsonDifferences } from './json-diff.ts';

export interface ReplayModelOptions extends SecretStripOptions {
  /**
   * Request fields left out of the comparison, as paths where `*` stands for any one key or index:
   * `settings.temperature`, `messages[*].content`, `messages[0]`, `tools`, `output`.
   */
  ignore?: readonly string[] | undefined;
}

/** A model that plays a cassette back. */
export interface ReplayModel extends ModelProvider {
  /** Calls answered so far. */
  readonly calls: number;
  /** The mismatches found so far (each also failed its call, and so the run, with stop reason `error`). */
  readonly mismatches: readonly CassetteMismatchError[];
  /**
   * Throws the first mismatch, if a call differed from the recording; then, unless `partial` is true, throws when
   * recorded calls were never asked for (the agent now stops earlier than it did).
   */
  assertReplayed(options?: { partial?: boolean }): void;
}

/**
 * Plays a cassette recorded by `recordingModel` offline: call i gets interaction i's deltas (streamed in order,
 * through `onDelta`) and its response, or its error thrown again. Each request is first compared with the recorded
 * one (messages, tools, output schema, settings, secrets stripped the same way): when they differ, the call fails
 * with a `CassetteMismatchError` whose message lists the differences by path (`messages[3].content: expected "..."
 * got "..."`). A request that matches another, unused interaction exactly is answered by that one (calls made
 * concurrently may arrive in another order than they were recorded).
 */
export function replayModel(cassette: string | Cassette, options: ReplayModelOptions = {}): ReplayModel {
  const where = typeof cassette === 'string' ? `the cassette ${cassette}` : 'the cassette';
  const recorded = typeof cassette === 'string' ? readCassette(cassette) : checkCassette(cassette, where);
  const ignore = options.ignore ?? [];
  const used = new Set<number>();
  const mismatches: CassetteMismatchError[] = [];
  let calls = 0;

  const differencesAt = (index: number, actual: unknown) =>
    jsonDifferences((recorded.interactions[index] as CassetteInteraction).request, actual, ignore);

  const choose = (call: number, actual: unknown): CassetteInteraction => {
    const next = recorded.interactions.findIndex((_interaction, index) => !used.has(index));
    if (next === -1) {
      throw new CassetteMismatchError(
        call,
        where,
        [],
        `Model call ${call} was not recorded: ${where} holds ${recorded.interactions.length} call(s), all replayed. ` +
          'The agent now makes more model calls than when it was recorded; record the cassette again if that is intended (TROUPE_CASSETTES=record).',
      );
    }
    const differences = differencesAt(next, actual);
    if (differences.length === 0) {
      used.add(next);
      return recorded.interactions[next] as CassetteInteraction;
    }
    const other = recorded.interactions.findIndex(
      (_interaction, index) => !used.has(index) && differencesAt(index, actual).length === 0,
    );
    if (other !== -1) {
      used.add(other);
      return recorded.interactions[other] as CassetteInteraction;
    }
    throw new CassetteMismatchError(call, where, differences);
  };

  return {
    provider: recorded.provider,
    model: recorded.model,
    get calls() {
      return calls;
    },
    get mismatches() {
      return mismatches;
    },
    assertReplayed({ partial = false } = {}) {
      if (mismatches[0]) throw mismatches[0];
      const unused = recorded.interactions.length - used.size;
      if (!partial && unused > 0)
        throw new CassetteMismatchError(
          calls + 1,
          where,
          [],
          `${unused} recorded model call(s) of ${where} were never made: the agent now makes ${calls} call(s), the recording has ${recorded.interactions.length}.`,
        );
    },
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const call = ++calls;
      if (request.signal.aborted) throw request.signal.reason ?? new Error('aborted');
      let interaction: CassetteInteraction;
      try {
        interaction = choose(call, cassetteRequest(request, options));
      } catch (error) {
        if (error instanceof CassetteMismatchError) mismatches.push(error);
        throw error;
      }
      // A real provider answers after the network does: events published when the call starts come first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (request.signal.aborted) throw request.signal.reason ?? new Error('aborted');
      for (const delta of interaction.deltas) request.onDelta?.(structuredClone(delta));
      if (interaction.error !== undefined) throw errorFromCassette(interaction.error);
      return structuredClone(interaction.response) as unknown as ModelResponse;
    },
  };
}
