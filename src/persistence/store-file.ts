import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonValue } from '../core/json.ts';
import type { SnapshotStore } from './snapshot-store.ts';

/**
 * A store of JSON files, one per key, in `directory` (created on first write). Each write goes to a temporary file
 * that is then renamed over the old one, so a crash mid-write leaves the previous value; writes to one key happen
 * in the order they were asked for.
 */
export function createFileStore(directory: string): SnapshotStore {
  const queues = new Map<string, Promise<void>>();
  let ready: Promise<unknown> | undefined;
  const fileOf = (key: string) => join(directory, `${encodeURIComponent(key)}.json`);
  const ensureDirectory = () => {
    ready ??= mkdir(directory, { recursive: true });
    return ready;
  };
  const enqueue = (key: string, work: () => Promise<void>): Promise<void> => {
    const previous = queues.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    queues.set(key, next);
    void next.finally(() => {
      if (queues.get(key) === next) queues.delete(key);
    });
    return next;
  };
  let counter = 0;
  return {
    async get(key) {
      await queues.get(key)?.catch(() => undefined);
      try {
        return JSON.parse(await readFile(fileOf(key), 'utf8')) as JsonValue;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    set(key, value) {
      const text = JSON.stringify(value);
      return enqueue(key, async () => {
        await ensureDirectory();
        const temporary = `${fileOf(key)}.${process.pid}.${counter++}.tmp`;
        await writeFile(temporary, text, 'utf8');
        await rename(temporary, fileOf(key));
      });
    },
    delete(key) {
      return enqueue(key, () => rm(fileOf(key), { force: true }));
    },
    async keys(prefix = '') {
      let names: string[];
      try {
        names = await readdir(directory);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      return names
        .filter((name) => name.endsWith('.json'))
        .map((name) => decodeURIComponent(name.slice(0, -'.json'.length)))
        .filter((key) => key.startsWith(prefix));
    },
  };
}
