import type { JsonValue } from '../../core/json.ts';
import type { RunResult } from '../../core/result.ts';

/** What the last-result resources show: the outcome only, or also the run's transcript (its messages), or nothing. */
export type LastResultsSetting = 'result' | 'transcript' | 'off';

/** Callers whose last results are kept; past it, the caller who called least recently is forgotten. */
const maxCallers = 1000;

/**
 * The last finished run of each served agent, per caller (the authenticated subject; every caller is the same one
 * without authentication), for the `troupe://agents/{name}/last-result` resources. A caller only ever reads its own
 * runs. Bounded: one result per agent for at most 1,000 callers.
 */
export class LastResults {
  readonly #byCaller = new Map<string, Map<string, RunResult<unknown>>>();
  readonly #setting: Exclude<LastResultsSetting, 'off'>;

  constructor(setting: Exclude<LastResultsSetting, 'off'>) {
    this.#setting = setting;
  }

  record(caller: string, agent: string, result: RunResult<unknown>): void {
    let results = this.#byCaller.get(caller);
    if (results !== undefined) this.#byCaller.delete(caller);
    else results = new Map();
    // Re-inserted, so the Map's order is least recently calling first.
    this.#byCaller.set(caller, results);
    results.set(agent, result);
    if (this.#byCaller.size > maxCallers) {
      const oldest = this.#byCaller.keys().next().value;
      if (oldest !== undefined) this.#byCaller.delete(oldest);
    }
  }

  /** The resource's JSON text: the caller's last run of the agent, or `{ agent, result: null }` before any. */
  read(caller: string, agent: string): string {
    const result = this.#byCaller.get(caller)?.get(agent);
    if (result === undefined) return JSON.stringify({ agent, result: null });
    const summary: Record<string, JsonValue | undefined> = {
      sessionId: result.sessionId,
      status: result.status,
      stopReason: result.stopReason,
      text: result.text,
      output: result.output as JsonValue | undefined,
      toolCallCount: result.toolCallCount,
      usage: result.usage as unknown as JsonValue,
      error: result.error ? { message: result.error.message } : undefined,
    };
    if (this.#setting === 'transcript') summary.transcript = result.historyDelta as unknown as JsonValue;
    return JSON.stringify({ agent, result: summary });
  }
}

/** The URI of an agent's last-result resource. */
export function lastResultUri(agent: string): string {
  return `troupe://agents/${encodeURIComponent(agent)}/last-result`;
}
