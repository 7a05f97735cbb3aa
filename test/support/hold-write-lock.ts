import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

/**
 * Another process takes a write lock on a new database file (not yet in WAL mode) and holds it for `holdMs`, or
 * until its stdin closes. Switching such a file to WAL is a lock upgrade that SQLite refuses at once instead of
 * calling its busy handler (waiting there could deadlock), which is what two processes opening one new store meet.
 */
export async function holdWriteLock(
  path: string,
  holdMs: number | 'until stdin closes',
): Promise<ChildProcess> {
  const release =
    holdMs === 'until stdin closes'
      ? "process.stdin.on('end', done); process.stdin.resume();"
      : `setTimeout(done, ${holdMs});`;
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const { DatabaseSync } = require('node:sqlite');
       const db = new DatabaseSync(${JSON.stringify(path)});
       db.exec('BEGIN IMMEDIATE');
       const done = () => { db.exec('COMMIT'); db.close(); };
       process.stdout.write('held\\n');
       ${release}`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const [data] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  if (data.toString() !== 'held\n') throw new Error(`the lock holder said ${data.toString()}`);
  return child;
}

/** Lets go of the lock (if the holder still runs) and waits for the holder to end. */
export async function endHolder(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null) return;
  const ended = once(child, 'exit');
  child.stdin?.end();
  await ended;
}
