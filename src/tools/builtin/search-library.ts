import { assertPeerInstalled, loadPeer } from '../../core/optional-peer.ts';

/**
 * MiniSearch (BM25+ full-text search) is an optional peer dependency: only documentSearch needs it. The tool
 * checks it can be found when it is made and imports it on its first search.
 */
export type MiniSearchModule = typeof import('minisearch');

const minisearch = { package: 'minisearch', import: () => import('minisearch') };

export function assertSearchLibraryInstalled(factory: string): void {
  assertPeerInstalled(minisearch, factory);
}

/** The module, imported once per process; a failed import is not kept, so installing it later works. */
export function loadSearchLibrary(factory: string): Promise<MiniSearchModule> {
  return loadPeer(minisearch, factory);
}
