import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, ModelError, type ModelErrorKind, TroupeError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { ModelDelta, ModelRequest, ModelResponse } from '../core/model.ts';
import { type SecretStripOptions, stripSecrets } from './cassette-secrets.ts';
import { formatDifferences, type JsonDifference } from './json-diff.ts';

/** A request as a cassette keeps it: what the model was sent, as JSON, secrets stripped (no signal, no callback). */
export interface CassetteRequest {
  messages: JsonValue[];
  tools: JsonValue[];
  output?: JsonValue;
  settings: JsonObject;
}

/** A failed call as a cassette keeps it; a `ModelError` is replayed with the same kind, status and retry hints. */
export interface CassetteError {
  name: string;
  message: string;
  kind?: ModelErrorKind;
  status?: number;
  retryable?: boolean;
  retryAfterMs?: number;
}

/** One model call: the request, the deltas streamed in order, and the response (or the error). */
export interface CassetteInteraction {
  request: CassetteRequest;
  deltas: ModelDelta[];
  /** The response without `raw` (the provider's raw payload is never recorded). */
  response?: JsonObject;
  error?: CassetteError;
}

/** The JSON file a recording model writes and a replay model reads. */
export interface Cassette {
  version: 1;
  /** The recorded provider's `provider` and `model`; the replay reports the same, so events match. */
  provider: string;
  model: string;
  interactions: CassetteInteraction[];
}

/** The request of a call as a cassette stores it, so a recording and a replay compare the same shape. */
export function cassetteRequest(request: ModelRequest, secrets: SecretStripOptions = {}): CassetteRequest {
  const json = (value: unknown) => JSON.parse(JSON.stringify(value ?? null)) as JsonValue;
  const stored: CassetteRequest = {
    messages: stripSecrets(json(request.messages), secrets) as JsonValue[],
    tools: stripSecrets(json(request.tools), secrets, false) as JsonValue[],
    settings: stripSecrets(json(request.settings), secrets) as JsonObject,
  };
  if (request.output !== undefined)
    stored.output = stripSecrets(json(request.output), secrets, false) as JsonValue;
  return stored;
}

/** A response as a cassette stores it: JSON, `raw` left out, secrets stripped. */
export function cassetteResponse(response: ModelResponse, secrets: SecretStripOptions = {}): JsonObject {
  const { raw: _raw, ...kept } = response;
  return stripSecrets(JSON.parse(JSON.stringify(kept)), secrets) as JsonObject;
}

/** Streamed deltas as a cassette stores them: JSON, secrets stripped. */
export function cassetteDeltas(
  deltas: readonly ModelDelta[],
  secrets: SecretStripOptions = {},
): ModelDelta[] {
  return stripSecrets(JSON.parse(JSON.stringify(deltas)), secrets) as ModelDelta[];
}

export function cassetteError(error: unknown, secrets: SecretStripOptions = {}): CassetteError {
  const strip = (text: string) => stripSecrets(text, secrets) as string;
  if (error instanceof ModelError) {
    const stored: CassetteError = { name: 'ModelError', message: strip(error.message), kind: error.kind };
    if (error.status !== undefined) stored.status = error.status;
    stored.retryable = error.retryable;
    if (error.retryAfterMs !== undefined) stored.retryAfterMs = error.retryAfterMs;
    return stored;
  }
  if (error instanceof Error) return { name: error.name, message: strip(error.message) };
  return { name: 'Error', message: strip(String(error)) };
}

/** The error a replay throws for a recorded failure: a ModelError like the recorded one, or an Error by name. */
export function errorFromCassette(stored: CassetteError): Error {
  if (stored.name === 'ModelError') {
    const options: { status?: number; retryable?: boolean; retryAfterMs?: number } = {};
    if (stored.status !== undefined) options.status = stored.status;
    if (stored.retryable !== undefined) options.retryable = stored.retryable;
    if (stored.retryAfterMs !== undefined) options.retryAfterMs = stored.retryAfterMs;
    return new ModelError(stored.kind ?? 'unknown', stored.message, options);
  }
  const error = new Error(stored.message);
  error.name = stored.name;
  return error;
}

/** Reads and checks a cassette file; a missing or malformed file is a ConfigError naming it. */
export function readCassette(path: string): Cassette {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read the cassette ${path}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`The cassette ${path} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return checkCassette(parsed, path);
}

export function checkCassette(value: unknown, where: string): Cassette {
  const cassette = value as Partial<Cassette> | null;
  if (
    typeof cassette !== 'object' ||
    cassette === null ||
    cassette.version !== 1 ||
    typeof cassette.provider !== 'string' ||
    typeof cassette.model !== 'string' ||
    !Array.isArray(cassette.interactions)
  )
    throw new ConfigError(
      `${where} is not a troupe cassette: expected { version: 1, provider, model, interactions: [...] }.`,
    );
  cassette.interactions.forEach((interaction, index) => {
    if (
      typeof interaction !== 'object' ||
      interaction === null ||
      typeof interaction.request !== 'object' ||
      !Array.isArray(interaction.deltas) ||
      (interaction.response === undefined) === (interaction.error === undefined)
    )
      throw new ConfigError(
        `${where}: interaction ${index + 1} must have a request, deltas, and a response or an error.`,
      );
  });
  return cassette as Cassette;
}

/** Writes a cassette as indented JSON (reviewable in a diff), creating its folder. */
export function writeCassette(path: string, cassette: Cassette): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(cassette, null, 2)}\n`);
}

/**
 * A replayed agent sent a request the cassette did not record: its instructions, history, tools, settings or output
 * schema changed since the recording. The message lists the differences by path; `differences` has them as data.
 */
export class CassetteMismatchError extends TroupeError {
  /** The call (from 1) that differed. */
  readonly call: number;
  readonly differences: readonly JsonDifference[];
  constructor(call: number, where: string, differences: readonly JsonDifference[], detail?: string) {
    super(
      'cassette_mismatch',
      detail ??
        `Model call ${call} differs from what ${where} recorded:\n${formatDifferences(differences)}\n` +
          'Record the cassette again if the change is intended (TROUPE_CASSETTES=record), or leave the field out of ' +
          "the comparison with the replay's `ignore` option.",
    );
    this.call = call;
    this.differences = differences;
  }
}
