import { callerOf } from '../../run/run-runtime.ts';
import type { ToolContext } from '../tool.ts';

/**
 * The tool calls running on one MCP connection, so that a request the server sends while they run (sampling,
 * elicitation, roots) is served for the run that made them. The protocol does not say which call a server's
 * request belongs to: it is the run's when every call in flight belongs to that one run; with calls of several
 * runs in flight (a shared connection) or none, the request cannot be attributed and is refused.
 */
export class CallsInFlight {
  readonly #calls = new Set<ToolContext>();

  /** Counts a call in while it runs; returns what counts it out. */
  enter(context: ToolContext): () => void {
    this.#calls.add(context);
    return () => {
      this.#calls.delete(context);
    };
  }

  /** The call a server's request belongs to (the latest of its run), or why there is none. */
  caller(server: string): { context: ToolContext } | { refusal: string } {
    let latest: ToolContext | undefined;
    let run: object | undefined;
    for (const context of this.#calls) {
      const runtime = callerOf(context) ?? context;
      if (run !== undefined && runtime !== run)
        return {
          refusal: `tool calls of several runs are in flight on the shared connection to MCP server "${server}", so the request cannot be attributed to one of them: declare the server with scope: 'session'.`,
        };
      run = runtime;
      latest = context;
    }
    if (latest === undefined)
      return { refusal: `no tool call of MCP server "${server}" is running to serve the request for.` };
    return { context: latest };
  }
}
