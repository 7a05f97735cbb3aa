import { ConfigError } from '../core/errors.ts';
import { type PiiKind, piiKinds } from './pii-detectors.ts';
import { assertPiiLibrariesInstalled, cardLibrary, ibanLibrary, phoneLibrary } from './pii-libraries.ts';

/**
 * Masking of personal data and secrets (emails, phone numbers, payment cards, IBANs, API keys and tokens) for a
 * run (`run(agent, input, { pii })`) or every session of a system (`createAgentSystem({ pii })`). Values are
 * replaced by placeholders such as `<EMAIL_1>`: the same value gets the same placeholder throughout the run or
 * session.
 */
export interface PiiOptions {
  /** What to look for. Default: every kind. */
  kinds?: readonly PiiKind[] | undefined;
  /**
   * ISO 3166 country (`'US'`, `'DE'`) of phone numbers written without a `+` prefix. Without it only numbers in
   * international form (`+1 415 555 2671`) are found, which keeps order numbers and the like from looking like
   * phones.
   */
  defaultCountry?: string | undefined;
  /**
   * Mask the events (every string and object key of every event's data): the stream, SSE, traces built from them
   * and the event log a session stores. Default true. Streamed text is held back only where a value may still be
   * under way (a word that may meet an `@`, digit groups a card may continue, a `Bearer` and what follows it, a PEM
   * key until its end line), so a value split across deltas is still masked.
   */
  events?: boolean | undefined;
  /** Mask the strings and keys of snapshots and events the inspection observer sees. Default true. */
  inspector?: boolean | undefined;
  /**
   * Mask what is sent to the model: it sees placeholders, and placeholders it writes (in its answer or in tool
   * arguments) are turned back into the real values before they reach tools, the conversation and the result.
   * The mapping stays in this process's memory. Default false.
   */
  model?: boolean | undefined;
}

/** Options checked and filled in. */
export interface ResolvedPii {
  kinds: ReadonlySet<PiiKind>;
  defaultCountry?: string | undefined;
  events: boolean;
  inspector: boolean;
  model: boolean;
}

/**
 * Checks `pii` options and loads the validation libraries the chosen kinds need (a missing one fails here, not
 * later with data let through). Undefined stays undefined: no masking.
 */
export function resolvePii(options: PiiOptions | undefined, where: string): ResolvedPii | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    throw new ConfigError(`${where}: pii must be an object such as { kinds: ['email', 'card'] }.`);
  const kinds = new Set<PiiKind>(options.kinds ?? piiKinds);
  for (const kind of kinds) {
    if (!piiKinds.includes(kind))
      throw new ConfigError(
        `${where}: unknown pii kind "${String(kind)}"; known kinds: ${piiKinds.join(', ')}.`,
      );
  }
  const country = options.defaultCountry;
  if (country !== undefined && !/^[A-Z]{2}$/.test(country))
    throw new ConfigError(`${where}: pii.defaultCountry must be a two-letter ISO country code such as 'US'.`);
  assertPiiLibrariesInstalled(kinds, where);
  if (kinds.has('phone')) phoneLibrary();
  if (kinds.has('iban')) ibanLibrary();
  if (kinds.has('card')) cardLibrary();
  return {
    kinds,
    defaultCountry: country,
    events: options.events ?? true,
    inspector: options.inspector ?? true,
    model: options.model ?? false,
  };
}
