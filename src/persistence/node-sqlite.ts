import type * as Sqlite from 'node:sqlite';

/**
 * Node's built-in `node:sqlite`, or undefined when this Node.js has none (before 22.5, or 22.5 to 22.12 without
 * `--experimental-sqlite`). Every part of Troupe that uses SQLite loads it here, when it is first needed.
 *
 * Node.js 22 prints `ExperimentalWarning: SQLite is an experimental feature` on stderr the first time the module
 * loads. Troupe chose SQLite for you, so that warning is not yours to act on: while the module loads (a synchronous
 * call), this one warning is dropped. Every other warning, including warnings emitted during the load, reaches
 * `process.emitWarning` as before, and `process.emitWarning` is restored as soon as the load returns or throws.
 */
export function loadNodeSqlite(): typeof Sqlite | undefined {
  const emitWarning = process.emitWarning;
  const filtered = function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
    if (isSqliteExperimentalWarning(warning, rest[0])) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  };
  process.emitWarning = filtered as typeof process.emitWarning;
  try {
    return process.getBuiltinModule('node:sqlite') as typeof Sqlite | undefined;
  } catch {
    return undefined;
  } finally {
    // Put back only our own wrapper: something that replaced it during the load keeps its place.
    if (process.emitWarning === filtered) process.emitWarning = emitWarning;
  }
}

/**
 * Whether `process.emitWarning(warning, typeOrOptions)` is Node's experimental warning for SQLite: of type
 * ExperimentalWarning (given as a type string, in an options object, or as an Error's name), and its text names
 * SQLite as experimental.
 */
export function isSqliteExperimentalWarning(warning: unknown, typeOrOptions?: unknown): boolean {
  const message =
    typeof warning === 'string' ? warning : warning instanceof Error ? warning.message : undefined;
  if (message === undefined || !/^SQLite is an experimental feature/.test(message)) return false;
  const type =
    warning instanceof Error
      ? warning.name
      : typeof typeOrOptions === 'string'
        ? typeOrOptions
        : typeof typeOrOptions === 'object' && typeOrOptions !== null
          ? (typeOrOptions as { type?: unknown }).type
          : undefined;
  return type === 'ExperimentalWarning';
}
