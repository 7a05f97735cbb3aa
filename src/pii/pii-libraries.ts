import { createRequire } from 'node:module';
import { ConfigError } from '../core/errors.ts';

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

const require = createRequire(import.meta.url);
const loaded = new Map<string, unknown>();

function load<T>(specifier: string, pkg: string): T {
  let module = loaded.get(specifier) as T | undefined;
  if (module === undefined) {
    try {
      module = require(specifier) as T;
    } catch (error) {
      throw new ConfigError(
        `pii: masking this kind of data needs the package "${pkg}". Install it with: npm install ${pkg}`,
        { cause: error },
      );
    }
    loaded.set(specifier, module);
  }
  return module;
}

/** libphonenumber-js with its full metadata ("max"): numbers are validated per country, not just by length. */
export function phoneLibrary(): PhoneLibrary {
  return load<PhoneLibrary>('libphonenumber-js/max', 'libphonenumber-js');
}

export function ibanLibrary(): IbanLibrary {
  return load<IbanLibrary>('ibantools', 'ibantools');
}

export function cardLibrary(): CardLibrary {
  return load<CardLibrary>('card-validator', 'card-validator');
}
