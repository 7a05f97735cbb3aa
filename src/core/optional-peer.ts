import { ConfigError } from './errors.ts';

/**
 * Optional peer dependencies: packages an application installs only for the feature that needs them (a provider's
 * SDK, the MCP SDK, a tokenizer, a validation library). Nothing here imports one by itself: each feature declares
 * its peer with a literal import (so bundlers and type checkers see it) and loads it through `loadPeer` or
 * `requirePeer`, once per process. A missing package fails with a `MissingPeerError` that names it, the command that
 * installs it and the feature that needs it.
 */

/** An optional peer dependency, as the feature that needs it declares it. */
export interface OptionalPeer<M> {
  /** The npm package to install. */
  readonly package: string;
  /** The module loaded: the package itself (the default) or one of its entry points. */
  readonly specifier?: string;
  /** The command that installs the package. Default `npm install <package>`. */
  readonly install?: string;
  /** Imports the module, with a literal specifier. Absent for a peer loaded synchronously (`requirePeer`). */
  readonly import?: () => Promise<M>;
}

/**
 * A feature needs an optional peer dependency that is not installed (or cannot be loaded). A ConfigError (its
 * `name` is `ConfigError`), with what it takes to fix it.
 */
export class MissingPeerError extends ConfigError {
  /** The npm package to install. */
  readonly package: string;
  /** The command that installs it. */
  readonly install: string;
  /** What needs it, as the user called it (`anthropic()`, `tokenLimit()`). */
  readonly feature: string;
  constructor(peer: OptionalPeer<unknown>, feature: string, cause: unknown) {
    const install = installOf(peer);
    super(
      `${feature} needs the "${peer.package}" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run \`${install}\`.`,
      { cause },
    );
    this.name = 'ConfigError';
    this.package = peer.package;
    this.install = install;
    this.feature = feature;
  }
}

/** One module's load: the import under way, and the module once it is in. */
interface Load {
  pending: Promise<unknown> | undefined;
  module: unknown;
}

/** Loads by module specifier: a peer is loaded once per process, whichever feature asks first. */
const loads = new Map<string, Load>();

/**
 * A `require` for the peers loaded synchronously, made on first use: creating one costs about 1 ms, which every
 * import of Troupe would pay.
 */
let peerRequire: NodeJS.Require | undefined;

function specifierOf(peer: OptionalPeer<unknown>): string {
  return peer.specifier ?? peer.package;
}

function installOf(peer: OptionalPeer<unknown>): string {
  return peer.install ?? `npm install ${peer.package}`;
}

/**
 * Throws a MissingPeerError when the peer cannot be found, without loading it: a feature checks where it is set up,
 * so a missing package fails there rather than on first use. Where `import.meta.resolve` is missing (some bundlers),
 * the first load reports the missing package instead.
 */
export function assertPeerInstalled(peer: OptionalPeer<unknown>, feature: string): void {
  if (typeof import.meta.resolve !== 'function') return;
  try {
    import.meta.resolve(specifierOf(peer));
  } catch (error) {
    throw new MissingPeerError(peer, feature, error);
  }
}

/**
 * The peer's module, imported once per process (the same promise for every caller). A failed import is not kept, so
 * installing the package later works; it rejects with a MissingPeerError.
 */
export function loadPeer<M>(
  peer: OptionalPeer<M> & { import: () => Promise<M> },
  feature: string,
): Promise<M> {
  const specifier = specifierOf(peer);
  let load = loads.get(specifier);
  if (load === undefined) {
    load = { pending: undefined, module: undefined };
    loads.set(specifier, load);
  }
  if (load.pending === undefined) {
    const entry = load;
    entry.pending = peer.import().then(
      (module) => {
        entry.module = module;
        return module;
      },
      (error: unknown) => {
        entry.pending = undefined;
        throw new MissingPeerError(peer, feature, error);
      },
    );
  }
  return load.pending as Promise<M>;
}

/** The peer's module when it is loaded already, for callers that must answer synchronously; else undefined. */
export function loadedPeer<M>(peer: OptionalPeer<M>): M | undefined {
  return loads.get(specifierOf(peer))?.module as M | undefined;
}

/** Modules loaded synchronously, by specifier: CommonJS exports, kept apart from the imported namespaces. */
const required = new Map<string, unknown>();

/**
 * The peer's module, loaded synchronously with `require` (once per process), for a feature that must answer
 * synchronously from its first use; throws a MissingPeerError when it cannot be loaded.
 */
export function requirePeer<M>(peer: OptionalPeer<M>, feature: string): M {
  const specifier = specifierOf(peer);
  let module = required.get(specifier) as M | undefined;
  if (module === undefined) {
    peerRequire ??= process.getBuiltinModule('node:module').createRequire(import.meta.url);
    try {
      module = peerRequire(specifier) as M;
    } catch (error) {
      throw new MissingPeerError(peer, feature, error);
    }
    required.set(specifier, module);
  }
  return module;
}
