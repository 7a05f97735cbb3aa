import { ConfigError } from '../core/errors.ts';

/** The fast-check module, as `import * as fc from 'fast-check'` gives it. */
export type FastCheck = typeof import('fast-check');

/**
 * fast-check is an optional peer dependency: only the property-based helpers of `troupe/testing` need it, and the
 * main `troupe` entry never loads it. It is imported once, when `troupe/testing` is; the same module instance as
 * the test's own `import fc from 'fast-check'`, so arbitraries from here mix with the test's.
 */
let loaded: FastCheck | undefined;
let failure: unknown;
try {
  loaded = await import('fast-check');
} catch (error) {
  failure = error;
}

/** The fast-check module, or a ConfigError naming the package to install when it is missing. */
export function fastCheck(feature: string): FastCheck {
  if (loaded === undefined)
    throw new ConfigError(
      `${feature} needs fast-check, an optional peer dependency of troupe: npm install --save-dev fast-check`,
      { cause: failure },
    );
  return loaded;
}
