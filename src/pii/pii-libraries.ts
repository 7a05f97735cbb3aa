import { type OptionalPeer, requirePeer } from '../core/optional-peer.ts';

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
