/**
 * Things a session (or the process) holds open on behalf of tools, such as MCP server connections and the child
 * processes behind them, and the one place that closes them: a session closes what it holds when it stops or
 * suspends, a plain run when it ends, and a system's shutdown closes what the process holds.
 */

/** Closes a held resource. Never rejects: a failure to close is the holder's to report. */
export type CloseResource = () => Promise<void>;

/** Registers `close` to run when the holder lets go; returns a function that forgets it (closed early). */
export type HoldResource = (close: CloseResource) => () => void;

/** Holders that hold something right now (for leak checks). */
let holding = 0;

/**
 * What one run or session holds open for its tools. The run host makes one per plain run, session, parallel group
 * or Restate turn and hands its `hold` to the tools' sources; the holder releases it when it ends.
 */
export class ResourceHoldings {
  /** Made on the first hold: most runs never hold anything, and an empty set is still a table per run. */
  #held: Set<CloseResource> | undefined;
  #hold: HoldResource | undefined;

  /** Registers what a tool's source opened for this holder (see HoldResource); the same function every time. */
  get hold(): HoldResource {
    this.#hold ??= this.#holdFunction();
    return this.#hold;
  }

  /**
   * The hold function, made by a call: V8 allocates a function literal stored straight into a property in the old
   * generation, where it would keep this holder reachable after its run ends.
   */
  #holdFunction(): HoldResource {
    return (close) => {
      this.#held ??= new Set();
      const held = this.#held;
      if (held.size === 0) holding += 1;
      held.add(close);
      return () => {
        if (!held.delete(close)) return;
        if (held.size === 0) holding -= 1;
      };
    };
  }

  /**
   * Closes everything held; undefined when nothing is (no promise, no microtask), so a run without such tools pays
   * nothing.
   */
  release(): Promise<void> | undefined {
    const held = this.#held;
    if (held === undefined || held.size === 0) return undefined;
    const closers = [...held];
    held.clear();
    holding -= 1;
    return closeAll(closers);
  }
}

const byProcess = new Set<CloseResource>();

/** Registers `close` to run at a system's shutdown (or `releaseProcessResources()`). Returns a forget function. */
export function holdForProcess(close: CloseResource): () => void {
  byProcess.add(close);
  return () => {
    byProcess.delete(close);
  };
}

/** Closes everything held for the process (connections are opened again on their next use). */
export function releaseProcessResources(): Promise<void> | undefined {
  if (byProcess.size === 0) return undefined;
  const held = [...byProcess];
  byProcess.clear();
  return closeAll(held);
}

/** How many runs and sessions hold something right now (for leak checks). */
export function sessionsHoldingResources(): number {
  return holding;
}

async function closeAll(closers: CloseResource[]): Promise<void> {
  await Promise.all(closers.map((close) => close().catch(() => undefined)));
}
