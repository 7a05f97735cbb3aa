/**
 * Things a session (or the process) holds open on behalf of tools, such as MCP server connections and the child
 * processes behind them, and the one place that closes them: a session closes what it holds when it stops or
 * suspends, a plain run when it ends, and a system's shutdown closes what the process holds.
 */

/** Closes a held resource. Never rejects: a failure to close is the holder's to report. */
export type CloseResource = () => Promise<void>;

const bySession = new Map<string, Set<CloseResource>>();
const byProcess = new Set<CloseResource>();

/** Registers `close` to run when the session `sessionId` ends. Returns a function that forgets it (closed early). */
export function holdForSession(sessionId: string, close: CloseResource): () => void {
  let held = bySession.get(sessionId);
  if (!held) {
    held = new Set();
    bySession.set(sessionId, held);
  }
  held.add(close);
  return () => {
    const current = bySession.get(sessionId);
    if (!current) return;
    current.delete(close);
    if (current.size === 0) bySession.delete(sessionId);
  };
}

/** Registers `close` to run at a system's shutdown (or `releaseProcessResources()`). Returns a forget function. */
export function holdForProcess(close: CloseResource): () => void {
  byProcess.add(close);
  return () => {
    byProcess.delete(close);
  };
}

/**
 * Closes everything the session holds; undefined when it holds nothing (no promise, no microtask), so a run
 * without such tools pays nothing.
 */
export function releaseSessionResources(sessionId: string): Promise<void> | undefined {
  const held = bySession.get(sessionId);
  if (!held) return undefined;
  bySession.delete(sessionId);
  return closeAll([...held]);
}

/** Closes everything held for the process (connections are opened again on their next use). */
export function releaseProcessResources(): Promise<void> | undefined {
  if (byProcess.size === 0) return undefined;
  const held = [...byProcess];
  byProcess.clear();
  return closeAll(held);
}

/** How many sessions hold something right now (for leak checks). */
export function sessionsHoldingResources(): number {
  return bySession.size;
}

async function closeAll(closers: CloseResource[]): Promise<void> {
  await Promise.all(closers.map((close) => close().catch(() => undefined)));
}
