import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import type { AuditHead } from './audit-record.ts';
import type { AuditSink } from './audit-sink.ts';

export interface JsonlAuditSinkOptions {
  /**
   * - `batch` (default): every batch is written with one append and then fsync'd: a batch the log reports as
   *   flushed is on disk.
   * - `none`: no fsync; the operating system writes the file when it likes (a power loss may lose the last
   *   batches; a process crash does not).
   */
  fsync?: 'batch' | 'none' | undefined;
}

/**
 * An audit sink appending one JSON record per line to `path` (created with its folder when missing). An existing
 * file is continued: the new records chain onto its last line. The file is only ever appended to.
 */
export function jsonlAuditSink(path: string, options: JsonlAuditSinkOptions = {}): AuditSink {
  if (typeof path !== 'string' || path === '')
    throw new ConfigError('jsonlAuditSink(): the path must be a non-empty string.');
  const fsync = options.fsync ?? 'batch';
  if (fsync !== 'batch' && fsync !== 'none')
    throw new ConfigError(`jsonlAuditSink(): fsync must be 'batch' or 'none', got ${JSON.stringify(fsync)}.`);
  // node:fs is fetched where it is used: importing it as a module costs every importer of Troupe at startup.
  process.getBuiltinModule('node:fs').mkdirSync(dirname(path), { recursive: true });
  const existing = readExisting(path);
  let handle: Promise<FileHandle> | undefined;
  // A line cut short by a crash stays in the file (verifyAuditLog reports it); new records start on a new line.
  let needsNewline = existing.length > 0 && !existing.endsWith('\n');
  return {
    head: () => lastRecordOf(existing),
    async append(records) {
      if (records.length === 0) return;
      handle ??= process.getBuiltinModule('node:fs/promises').open(path, 'a');
      const file = await handle;
      const text = `${needsNewline ? '\n' : ''}${records.map((record) => JSON.stringify(record)).join('\n')}\n`;
      needsNewline = false;
      await file.appendFile(text, 'utf8');
      if (fsync === 'batch') await file.sync();
    },
    async close() {
      const opened = handle;
      handle = undefined;
      if (opened) await (await opened).close();
    },
  };
}

function readExisting(path: string): string {
  try {
    return process.getBuiltinModule('node:fs').readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/** The seq and hash of the last whole line, to continue the chain; undefined for an empty file. */
function lastRecordOf(text: string): AuditHead | undefined {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const record = JSON.parse(lines[i] as string) as { seq?: unknown; hash?: unknown };
      if (typeof record.seq === 'number' && typeof record.hash === 'string')
        return { seq: record.seq, hash: record.hash };
    } catch {
      // A line cut short by a crash: the chain continues from the last whole record.
    }
  }
  return undefined;
}
