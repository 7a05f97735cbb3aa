import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { MissingPeerError } from '../core/optional-peer.ts';
import type { FastCheck } from './fast-check-types.ts';

export type { FastCheck } from './fast-check-types.ts';

const require = createRequire(import.meta.url);
let loaded: FastCheck | undefined;

/** How the missing package is named in errors (loaded here synchronously, not through the shared async loader). */
const fastCheckPeer = {
  package: 'fast-check',
  install: 'npm install --save-dev fast-check',
  import: (): Promise<FastCheck> => import('fast-check'),
};

/**
 * The fast-check module, or a ConfigError naming the package to install when it is missing. fast-check is an
 * optional peer dependency: only the property-based helpers of `troupe/testing` need it, so it is loaded on their
 * first call, never when `troupe/testing` is imported (which keeps that entry loadable by `require()` too). It is
 * loaded synchronously from the file `import 'fast-check'` resolves to, so it is the same module instance as the
 * test's own `import fc from 'fast-check'` and arbitraries from here mix with the test's.
 */
export function fastCheck(feature: string): FastCheck {
  if (loaded !== undefined) return loaded;
  try {
    loaded = loadFastCheck();
  } catch (error) {
    throw new MissingPeerError(fastCheckPeer, feature, error);
  }
  return loaded;
}

function loadFastCheck(): FastCheck {
  const esm = fileURLToPath(import.meta.resolve('fast-check'));
  try {
    return require(esm) as FastCheck;
  } catch (error) {
    // A Node.js that cannot require() an ES module (before 22.12) loads fast-check's CommonJS build instead.
    if ((error as { code?: unknown }).code !== 'ERR_REQUIRE_ESM') throw error;
    return require('fast-check') as FastCheck;
  }
}
