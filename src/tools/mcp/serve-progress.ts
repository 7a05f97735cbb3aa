import type { LoggingLevel, ServerContext } from '@modelcontextprotocol/server';
import type { RunEvent } from '../../core/events.ts';

/** One line about a run's progress, and how loud it is as an MCP log message. */
interface ProgressLine {
  level: LoggingLevel;
  message: string;
}

/**
 * Tells the MCP client how a served agent's run goes, from the run's events: each model answer, tool call, tool
 * result, handoff, wait and error becomes a `notifications/progress` (when the client asked for progress with a
 * progress token; `progress` counts these steps, there is no total) and a log message at the matching level
 * (which the SDK sends only when the client's log level lets it through). Text deltas and phase changes are not
 * sent: they are many and say little. Notifications go out in order; a failed one is dropped, never failing the
 * call, and `flush()` waits for those already sent, so they reach the client before the result.
 */
export class RunProgressReporter {
  readonly #ctx: ServerContext;
  readonly #token: string | number | undefined;
  #progress = 0;
  #sending: Promise<void> = Promise.resolve();

  constructor(ctx: ServerContext) {
    this.#ctx = ctx;
    const token = ctx.mcpReq._meta?.progressToken;
    this.#token = typeof token === 'string' || typeof token === 'number' ? token : undefined;
  }

  report(event: RunEvent): void {
    const line = describe(event);
    if (line === undefined) return;
    this.#progress += 1;
    const progress = this.#progress;
    const token = this.#token;
    const ctx = this.#ctx;
    this.#sending = this.#sending.then(async () => {
      try {
        if (token !== undefined)
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken: token, progress, message: line.message },
          });
        await ctx.mcpReq.log(line.level, line.message, event.agent);
      } catch {
        // The client went away or the stream closed: progress is best effort.
      }
    });
  }

  flush(): Promise<void> {
    return this.#sending;
  }
}

function describe(event: RunEvent): ProgressLine | undefined {
  const who = event.depth > 0 ? `${event.agent} (nested)` : event.agent;
  switch (event.type) {
    case 'run_start':
      return event.depth > 0 ? { level: 'info', message: `${who} started` } : undefined;
    case 'model_response':
      return {
        level: 'info',
        message:
          event.data.toolCallCount > 0
            ? `${who}: step ${event.data.step}, the model asked for ${event.data.toolCallCount} tool call${event.data.toolCallCount === 1 ? '' : 's'}`
            : `${who}: step ${event.data.step}, the model answered`,
      };
    case 'tool_call':
      return { level: 'info', message: `${who}: calling ${event.data.name}` };
    case 'tool_response':
      return event.data.isError
        ? { level: 'warning', message: `${who}: ${event.data.name} failed` }
        : { level: 'info', message: `${who}: ${event.data.name} answered` };
    case 'handoff':
      return event.data.outcome === 'accepted'
        ? { level: 'info', message: `${event.data.from} handed the conversation to ${event.data.to}` }
        : { level: 'warning', message: `${event.data.from} could not hand over to ${event.data.to}` };
    case 'approval_requested':
      return { level: 'notice', message: `${who}: ${event.data.tool} waits for a person's decision` };
    case 'budget_wait':
    case 'quota_wait':
      return { level: 'notice', message: `${who} waits for budget or quota` };
    case 'budget_warning':
      return { level: 'warning', message: `${who}: the budget is running low` };
    case 'error':
      return { level: 'error', message: `${who}: ${event.data.message}` };
    case 'run_end':
      return {
        level: event.data.status === 'completed' ? 'info' : 'warning',
        message: `${who} ${event.data.status} (${event.data.stopReason})`,
      };
    default:
      return undefined;
  }
}
