import { ConfigError } from '../../core/errors.ts';

/**
 * MiniSearch (BM25+ full-text search) is an optional peer dependency: only documentSearch needs it. The tool
 * checks it can be found when it is made and imports it on its first search.
 */
export type MiniSearchModule = typeof import('minisearch');

let loading: Promise<MiniSearchModule> | undefined;

export function assertSearchLibraryInstalled(factory: string): void {
  if (typeof import.meta.resolve !== 'function') return;
  try {
    import.meta.resolve('minisearch');
  } catch (error) {
    throw missingLibrary(factory, error);
  }
}

/** The module, imported once per process; a failed import is not kept, so installing it later works. */
export function loadSearchLibrary(factory: string): Promise<MiniSearchModule> {
  if (loading === undefined) {
    loading = import('minisearch').catch((error: unknown) => {
      loading = undefined;
      throw missingLibrary(factory, error);
    });
  }
  return loading;
}

function missingLibrary(factory: string, cause: unknown): ConfigError {
  return new ConfigError(
    `${factory} needs the "minisearch" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run \`npm install minisearch\`.`,
    { cause },
  );
}
