import type { SessionStore } from '../../src/persistence/store.ts';

/**
 * A store whose process "dies" on `kill()`: from then on nothing it is asked to write reaches the underlying
 * store (as after a SIGKILL), while reads still work. For tests of recovery inside one process.
 */
export function dyingStore(store: SessionStore): { store: SessionStore; kill(): void } {
  let dead = false;
  return {
    kill: () => {
      dead = true;
    },
    store: {
      load: (id) => store.load(id),
      readEvents: (id, after, limit) => store.readEvents(id, after, limit),
      list: (query) => store.list(query),
      approvals: (query) => store.approvals(query),
      commit: (id, batch) => (dead ? undefined : store.commit(id, batch)),
      delete: (id) => (dead ? undefined : store.delete(id)),
      close: () => undefined,
    },
  };
}
