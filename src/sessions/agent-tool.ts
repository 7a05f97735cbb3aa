import type { Agent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import type { RunResult } from '../core/result.ts';
import { zod } from '../core/zod.ts';
import { piiOf } from '../pii/pii-run.ts';
import type { NestedPlacement, RunOptions } from '../run/run.ts';
import { callerOf, type RunRuntime, reportSpend } from '../run/run-runtime.ts';
import { type Tool, type ToolContext, tool } from '../tools/tool.ts';
import { streamPlaced } from './run.ts';
import { needsSession, needsSupervisor } from './session-run.ts';
import { SubAgentError } from './sub-agent-error.ts';

export { SubAgentError } from './sub-agent-error.ts';

export interface AgentToolOptions {
  /** The tool name the model sees; default: the agent's name (characters tools may not hold become `_`). */
  name?: string | undefined;
  /** What the sub-agent does, for the model; default: the agent's description. */
  description?: string | undefined;
}

/**
 * A tool that runs an agent; `delegate` is that agent (the session reads its secrets for the inspector). It needs
 * the run context the agent needs: the nested agent gets its caller's context.
 */
export type AgentTool<TContext = unknown> = Tool<{ input: string }, unknown, TContext> & {
  readonly delegate: Agent<unknown>;
};

/**
 * An agent as a tool: the model calls it with a task, the sub-agent runs to the end, and its
 * output (or text) is the tool's result. Inside a session the sub-agent is a child actor of the session (explicit id,
 * stopped when done); in a plain run it is its own root actor. Limits carry down: the sub-run may use at most the
 * caller's remaining steps and time, its model calls count against the caller's step limit, its spend against the
 * caller's budget, and the caller's abort (or timeout, or end) aborts it. A sub-run that does not complete is a
 * tool error the caller's model sees. The sub-run's events appear in the caller's stream under the sub-agent's name.
 */
export function agentTool<TOutput, TContext = unknown>(
  agent: Agent<TOutput, TContext>,
  options: AgentToolOptions = {},
): AgentTool<TContext> {
  if (agent?.kind !== 'agent') throw new ConfigError('agentTool(): the first argument must be an agent.');
  const description = options.description ?? agent.description;
  if (typeof description !== 'string' || description.trim() === '') {
    throw new ConfigError(
      `agentTool(${JSON.stringify(agent.name)}): give a description (or define the agent with one); the model reads it.`,
    );
  }
  const created = tool({
    name: options.name ?? agent.name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64),
    description,
    input: zod().object({ input: zod().string().describe(`The task for ${agent.name}, in plain words.`) }),
    // A sub-run is not retried: its failure goes back to the model, which decides.
    maxRetries: 0,
    async execute({ input }, ctx) {
      const caller = callerOf(ctx);
      const limits = { ...agent.limits };
      if (caller) {
        const remaining = caller.agent.limits.maxSteps - ctx.step;
        if (remaining < 1) throw new Error(`no steps left for ${agent.name} within the caller's step limit.`);
        limits.maxSteps = Math.min(limits.maxSteps, remaining);
      }
      const clock = caller?.clock;
      if (caller?.deadline != null && clock) {
        const left = caller.deadline - clock.now();
        if (left <= 0) throw new Error(`no time left for ${agent.name} within the caller's timeout.`);
        limits.timeoutMs = limits.timeoutMs === null ? left : Math.min(limits.timeoutMs, left);
      }
      const nested = Object.freeze({ ...agent, limits }) as Agent<unknown>;
      const delegator = caller?.delegate;
      const result =
        delegator && !needsSupervisor(nested)
          ? await delegator({ agent: nested, input, callId: ctx.callId, signal: ctx.signal })
          : await runApart(nested, input, ctx, caller);
      // The sub-run's own model calls count against the caller's step limit, and all it spent goes into the
      // caller's result with this call's outcome, whatever its outcome.
      if (caller) {
        caller.nestedSteps += result.modelCalls - (result.nested?.modelCalls ?? 0);
        reportSpend(caller, ctx.callId, { usage: result.usage, modelCalls: result.modelCalls });
      }
      if (result.status !== 'completed') throw new SubAgentError(agent.name, result);
      return result.output !== undefined ? result.output : result.text;
    },
  });
  return Object.assign(created as Tool<{ input: string }, unknown, TContext>, {
    delegate: agent as Agent<unknown>,
  });
}

/** A sub-run on its own root actor (a plain caller, or a sub-agent with handoffs), events forwarded to the caller. */
async function runApart(
  nested: Agent<unknown>,
  input: string,
  ctx: ToolContext,
  caller: RunRuntime | undefined,
): Promise<RunResult<unknown>> {
  const runOptions: RunOptions = {
    signal: ctx.signal,
    sessionId: `${caller?.key ?? ctx.sessionId}:${ctx.callId}`,
  };
  // A nested agent works for the same caller: it gets the calling agent's context, and the people who decide for
  // the caller decide for it.
  if (ctx.context !== undefined) runOptions.context = ctx.context;
  if (caller?.onApproval) runOptions.onApproval = caller.onApproval;
  // The sub-run sits in the caller's session: its tools see the caller's session id and their route, and its
  // events (its own run_start and run_end too) carry that route, one level deeper than the caller's.
  const callerRoute = caller?.route ?? caller?.agent.name ?? '';
  const callerDepth = caller?.origin?.depth ?? 0;
  const placement: NestedPlacement = {
    sessionId: caller?.sessionId ?? caller?.bus.sessionId ?? ctx.sessionId,
    route: `${callerRoute}>${ctx.callId}/${nested.name}`,
    callPath: caller?.callPath ? `${caller.callPath}/${ctx.callId}` : ctx.callId,
    origin: { route: `${callerRoute}>${ctx.callId}/${nested.name}`, depth: callerDepth + 1 },
    turn: ctx.turn,
    // Its spend counts on the caller's budgets; it runs on the caller's clock, inspector and audit log.
    caller,
  };
  // A sub-agent that needs a session (handoffs) runs in a private one: its tools are placed like the others', its
  // events relative to it (placed here).
  const inSession = needsSession(nested);
  const callerPii = caller && !inSession ? piiOf(caller.bus) : undefined;
  if (callerPii) placement.pii = callerPii;
  const sub = streamPlaced(nested, input, runOptions, placement);
  for await (const event of sub) {
    if (!caller) continue;
    const origin = inSession
      ? { route: `${callerRoute}>${ctx.callId}/${event.route}`, depth: callerDepth + 1 + event.depth }
      : event.depth === 0
        ? placement.origin
        : { route: event.route, depth: event.depth };
    caller.bus.emit(event.agent, event.type, event.data as never, origin);
  }
  return sub.result;
}
