import { loadedPeer, loadPeer, MissingPeerError } from '../core/optional-peer.ts';

/** The fast-check module, as `import * as fc from 'fast-check'` gives it. */
export type FastCheck = typeof import('fast-check');

/**
 * fast-check is an optional peer dependency: only the property-based helpers of `troupe/testing` need it, and the
 * main `troupe` entry never loads it. It is imported once, when `troupe/testing` is; the same module instance as
 * the test's own `import fc from 'fast-check'`, so arbitraries from here mix with the test's.
 */
const fastCheckPeer = {
  package: 'fast-check',
  install: 'npm install --save-dev fast-check',
  import: (): Promise<FastCheck> => import('fast-check'),
};

let failure: unknown;
try {
  await loadPeer(fastCheckPeer, 'troupe/testing');
} catch (error) {
  failure = error instanceof MissingPeerError ? error.cause : error;
}

/** The fast-check module, or a ConfigError naming the package to install when it is missing. */
export function fastCheck(feature: string): FastCheck {
  const loaded = loadedPeer(fastCheckPeer);
  if (loaded === undefined) throw new MissingPeerError(fastCheckPeer, feature, failure);
  return loaded;
}
