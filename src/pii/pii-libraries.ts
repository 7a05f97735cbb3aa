import { ConfigError } from '../core/errors.ts';
import {
  assertPeerInstalled,
  MissingPeerError,
  type OptionalPeer,
  requirePeer,
} from '../core/optional-peer.ts';
import type { PiiKind } from './pii-detectors.ts';

/**
 * The validation libraries masking uses are optional peer dependencies, loaded (synchronously: masking runs inside
 * the event stream) the first time a run with `pii` options starts. A missing package fails there, with the
 * command that fixes it, instead of letting personal data through unmasked.
 */

interface PhoneMatch {
  startsAt: number;
  endsAt: number;
}

export interface PhoneLibrary {
  findPhoneNumbersInText(text: string, options?: { defaultCountry?: string }): PhoneMatch[];
}

export interface IbanLibrary {
  isValidIBAN(iban: string): boolean;
  electronicFormatIBAN(iban?: string): string | null;
}

export interface CardLibrary {
  number(
    value: string,
    options?: { luhnValidateUnionPay?: boolean; maxLength?: number },
  ): { isValid: boolean };
}

export interface PiiLibraries {
  phone: PhoneLibrary;
  iban: IbanLibrary;
  card: CardLibrary;
}

const feature = 'pii: masking this kind of data';

/** libphonenumber-js with its full metadata ("max"): numbers are validated per country, not just by length. */
const phone: OptionalPeer<PhoneLibrary> = {
  package: 'libphonenumber-js',
  specifier: 'libphonenumber-js/max',
};
const iban: OptionalPeer<IbanLibrary> = { package: 'ibantools' };
const card: OptionalPeer<CardLibrary> = { package: 'card-validator' };

export function phoneLibrary(): PhoneLibrary {
  return requirePeer(phone, feature);
}

export function ibanLibrary(): IbanLibrary {
  return requirePeer(iban, feature);
}

export function cardLibrary(): CardLibrary {
  return requirePeer(card, feature);
}

/** The libraries each kind validates its matches with; kinds not listed need none. */
const peersByKind: ReadonlyMap<PiiKind, OptionalPeer<unknown>> = new Map<PiiKind, OptionalPeer<unknown>>([
  ['phone', phone],
  ['iban', iban],
  ['card', card],
]);

/**
 * Checks that every library the chosen kinds need can be found, and names all the missing ones in one ConfigError
 * with one command that installs them.
 */
export function assertPiiLibrariesInstalled(kinds: ReadonlySet<PiiKind>, where: string): void {
  const missing: { kind: PiiKind; error: MissingPeerError }[] = [];
  for (const [kind, peer] of peersByKind) {
    if (!kinds.has(kind)) continue;
    try {
      assertPeerInstalled(peer, feature);
    } catch (error) {
      if (!(error instanceof MissingPeerError)) throw error;
      missing.push({ kind, error });
    }
  }
  if (missing.length === 0) return;
  const packages = missing.map(({ error }) => error.package);
  const needs = missing.map(({ kind, error }) => `"${error.package}" (${kind})`).join(', ');
  throw new ConfigError(
    `${where}: pii masking needs ${needs}, optional peer ${missing.length === 1 ? 'dependency' : 'dependencies'} of troupe that ${missing.length === 1 ? 'is' : 'are'} not installed: run \`npm install ${packages.join(' ')}\`, or leave ${missing.length === 1 ? 'that kind' : 'those kinds'} out of pii.kinds.`,
    {
      cause: missing.length === 1 ? missing[0]?.error : new AggregateError(missing.map(({ error }) => error)),
    },
  );
}
