import type { HoldResource } from '../core/session-resources.ts';
import type { Tool } from './tool.ts';

/** Where a run's tools are listed from: the session the run belongs to, and the run's signal. */
export interface ToolSourceScope {
  sessionId: string;
  signal: AbortSignal;
  /** The run's context (the `context` run option), when it has one. */
  context?: unknown;
  /**
   * Holds what the source opens for this session (a per-session connection) until the run or session ends, which
   * then closes it. Absent outside a run (`connect()`): the caller closes what it opened.
   */
  hold?: HoldResource | undefined;
  /**
   * Told when an optional source (an MCP server with `required: false`) cannot be reached and the run goes on
   * without its tools; the run reports it as an event.
   */
  unavailable?: ((report: ToolSourceUnavailable) => void) | undefined;
}

/** An optional source the run goes on without: its name, why, and when it is tried again. */
export interface ToolSourceUnavailable {
  source: string;
  error: unknown;
  retryInMs: number;
}

/**
 * A set of tools that is only known at run time (an MCP server's tools): put it in an agent's `tools` next to
 * `tool(...)` definitions. Before each model call the run asks the source to bring its list up to date
 * (`prepare`), and the agent's registry then offers `current()` to the model.
 */
export interface ToolSource {
  readonly kind: 'tool-source';
  /** Names the source in messages and stands for its tools until they are first listed. */
  readonly name: string;
  /** The tools as last listed; empty before the first listing. */
  current(): readonly Tool[];
  /** Changes whenever `current()` does, so a registry can tell without comparing lists. */
  readonly version: number;
  /** Whether `current()` is up to date for this scope; when false the run awaits `prepare` first. */
  isReady(scope: ToolSourceScope): boolean;
  /**
   * Connects for the scope's session if need be and (re)lists the tools when they were never listed, the source
   * said they changed, or their cache time ran out. Rejects when the source cannot be reached.
   */
  prepare(scope: ToolSourceScope): Promise<void>;
}

export function isToolSource(value: unknown): value is ToolSource {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'tool-source';
}
