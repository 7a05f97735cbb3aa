import type { JsonValue } from '../core/json.ts';
import type { SnapshotStore } from './snapshot-store.ts';

/**
 * The default store: a Map in this process. Values are kept by reference (the runtime never mutates what it
 * saves), so a checkpoint per step costs one Map write.
 */
export function createMemoryStore(): SnapshotStore & { readonly size: number } {
  const entries = new Map<string, JsonValue>();
  return {
    get size() {
      return entries.size;
    },
    get: (key) => entries.get(key),
    set: (key, value) => {
      entries.set(key, value);
    },
    delete: (key) => {
      entries.delete(key);
    },
    keys: (prefix = '') => [...entries.keys()].filter((key) => key.startsWith(prefix)),
  };
}
