/** Whether SQLite refused because another connection holds a lock (SQLITE_BUSY or SQLITE_LOCKED, any extended code). */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== 'number') return false;
  const primary = code & 0xff;
  return primary === 5 || primary === 6;
}

/**
 * Runs `attempt` until it returns, again each time SQLite answers busy, for at most `timeoutMs` in all; then throws
 * the last error. For the steps SQLite refuses at once instead of calling its busy handler, because waiting there
 * could deadlock: switching a new file to WAL while another process writes to it is one. `attempt` undoes what it
 * did (closes what it opened) before it throws. Blocks the thread between attempts: opening a file is synchronous.
 */
export function retryWhileBusy<T>(timeoutMs: number, attempt: () => T): T {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
    try {
      return attempt();
    } catch (error) {
      const remaining = deadline - Date.now();
      if (!isSqliteBusy(error) || remaining <= 0) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(pause, remaining));
    }
  }
}
