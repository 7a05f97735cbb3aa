import type { Agent } from '../agent/define-agent.ts';
import type { EventBus, EventOrigin } from '../core/event-bus.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, RunInput } from '../core/messages.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import type { AgentMachineInput } from '../machines/agent.ts';
import { countRuntime, deltaForwarder, type RunRuntime } from './run-runtime.ts';

/**
 * The run host: how every entry point (run and stream, sessions, agents used as tools, handoffs, parallel groups,
 * Restate turns) starts an agent. Each entry point says where the agent runs (its bus, clock, place in the session,
 * durability, budgets, people who decide); the host builds the one runtime object the agent's effects use and the
 * machine input, and emits the run's start the same way everywhere. Every cross-cutting feature reaches an agent
 * through the runtime made here: a feature added to it applies on every entry point at once.
 */

/** What an entry point says about an agent run; the host adds the rest (its delta forwarder, its counters). */
export type AgentRunSpec = Omit<RunRuntime, 'onDelta' | 'nestedSteps'>;

/** A live agent run: its runtime, and what ends it (once). */
export interface HostedRun {
  runtime: RunRuntime;
  /** Counts the run out; call once when the agent's actor has stopped. */
  release: () => void;
}

/**
 * Makes an agent run's runtime. Getters in `spec` (a session's turn and run context change while it runs) are kept
 * as getters: the spec object itself becomes the runtime.
 */
export function hostAgent(spec: AgentRunSpec): HostedRun {
  const runtime = spec as RunRuntime;
  runtime.onDelta = deltaForwarder(spec.bus, spec.agent.name, spec.origin);
  runtime.nestedSteps = 0;
  return { runtime, release: countRuntime() };
}

/** The agent machine's input for a run of `agent` over `history` (the caller's, then this run's user message). */
export function agentInput(
  agent: Agent<unknown>,
  key: string,
  history: Message[],
  baseLength: number,
): AgentMachineInput {
  return {
    sessionId: key,
    agent: agent.name,
    limits: agent.limits,
    toolNames: agent.tools.names,
    hasOutputSchema: agent.outputSchema !== undefined,
    history,
    baseLength,
    ...guardrailInput(agent.guardrails),
  };
}

/** The `run_start` event of an agent run, as every entry point emits it. Returns its seq. */
export function emitRunStart(
  bus: EventBus,
  agent: Agent<unknown>,
  input: RunInput,
  historyLength: number,
  origin?: EventOrigin,
): number {
  const seq = bus.nextSeq;
  bus.emit(
    agent.name,
    'run_start',
    {
      input: input as JsonValue,
      historyLength,
      model: agent.model.model,
      provider: agent.model.provider,
    },
    origin,
  );
  return seq;
}
