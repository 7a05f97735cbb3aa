import { ConfigError } from '../core/errors.ts';

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
const importers: { [P in SdkPackage]: () => Promise<SdkModules[P]> } = {
  openai: () => import('openai'),
  '@anthropic-ai/sdk': () => import('@anthropic-ai/sdk'),
  '@google/genai': () => import('@google/genai'),
};

const loading = new Map<SdkPackage, Promise<unknown>>();

/**
 * Throws a ConfigError naming the package to install when `pkg` cannot be resolved from here. `factory` is what
 * the user called, for the message (`anthropic()`).
 */
export function assertSdkInstalled(pkg: SdkPackage, factory: string): void {
  // Where import.meta.resolve is missing (some bundlers), the first call reports a missing package instead.
  if (typeof import.meta.resolve !== 'function') return;
  try {
    import.meta.resolve(pkg);
  } catch (error) {
    throw missingSdkError(pkg, factory, error);
  }
}

/** The SDK module, imported once per process; a failed import is not cached, so installing it later works. */
export function loadSdk<P extends SdkPackage>(pkg: P, factory: string): Promise<SdkModules[P]> {
  let pending = loading.get(pkg) as Promise<SdkModules[P]> | undefined;
  if (pending === undefined) {
    pending = importers[pkg]().catch((error: unknown) => {
      loading.delete(pkg);
      throw missingSdkError(pkg, factory, error);
    }) as Promise<SdkModules[P]>;
    loading.set(pkg, pending);
  }
  return pending;
}

function missingSdkError(pkg: SdkPackage, factory: string, cause: unknown): ConfigError {
  return new ConfigError(
    `${factory} needs the "${pkg}" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run \`npm install ${pkg}\`.`,
    { cause },
  );
}

/** A client made with the SDK, and the SDK module itself (its error classes classify failures). */
export interface SdkClient<P extends SdkPackage, C> {
  sdk: SdkModules[P];
  client: C;
}

/**
 * Checks now that `pkg` is installed and returns a getter that loads it and makes the client on first use, once
 * (a failure is not kept: the next call tries again).
 */
export function lazySdkClient<P extends SdkPackage, C>(
  pkg: P,
  factory: string,
  create: (sdk: SdkModules[P]) => C,
): () => Promise<SdkClient<P, C>> {
  assertSdkInstalled(pkg, factory);
  let made: Promise<SdkClient<P, C>> | undefined;
  return () => {
    made ??= loadSdk(pkg, factory)
      .then((sdk) => ({ sdk, client: create(sdk) }))
      .catch((error: unknown) => {
        made = undefined;
        throw error;
      });
    return made;
  };
}
