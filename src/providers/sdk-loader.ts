import { assertPeerInstalled, loadPeer, type OptionalPeer } from '../core/optional-peer.ts';

/**
 * The official SDKs are optional peer dependencies: an application installs only the ones it uses, and
 * `troupe/providers` loads none of them when it is imported. A provider factory checks, synchronously, that its
 * SDK can be found (so a missing package fails where the model is created, with the command that fixes it), and
 * the SDK itself is imported on the provider's first call.
 */

export type OpenAISdk = typeof import('openai');
export type AnthropicSdk = typeof import('@anthropic-ai/sdk');
export type GeminiSdk = typeof import('@google/genai');

interface SdkModules {
  openai: OpenAISdk;
  '@anthropic-ai/sdk': AnthropicSdk;
  '@google/genai': GeminiSdk;
}

/** An SDK package a provider may need. */
export type SdkPackage = keyof SdkModules;

// Literal specifiers, so bundlers and type checkers see each import.
const peers: { [P in SdkPackage]: OptionalPeer<SdkModules[P]> & { import: () => Promise<SdkModules[P]> } } = {
  openai: { package: 'openai', import: () => import('openai') },
  '@anthropic-ai/sdk': { package: '@anthropic-ai/sdk', import: () => import('@anthropic-ai/sdk') },
  '@google/genai': { package: '@google/genai', import: () => import('@google/genai') },
};

/** A client made with the SDK, and the SDK module itself (its error classes classify failures). */
export interface SdkClient<P extends SdkPackage, C> {
  sdk: SdkModules[P];
  client: C;
}

/**
 * Throws a ConfigError naming `pkg` and its install command when it cannot be found. A factory checks this before
 * anything else (the API key included): a missing package is the first thing to fix.
 */
export function assertSdkInstalled(pkg: SdkPackage, factory: string): void {
  assertPeerInstalled(peers[pkg], factory);
}

/**
 * Checks now that `pkg` is installed and returns a getter that loads it and makes the client on first use, once
 * (a failure is not kept: the next call tries again). `factory` is what the user called, for the message
 * (`anthropic()`).
 */
export function lazySdkClient<P extends SdkPackage, C>(
  pkg: P,
  factory: string,
  create: (sdk: SdkModules[P]) => C,
): () => Promise<SdkClient<P, C>> {
  const peer = peers[pkg];
  assertPeerInstalled(peer, factory);
  let made: Promise<SdkClient<P, C>> | undefined;
  return () => {
    made ??= loadPeer(peer, factory)
      .then((sdk) => ({ sdk, client: create(sdk) }))
      .catch((error: unknown) => {
        made = undefined;
        throw error;
      });
    return made;
  };
}
