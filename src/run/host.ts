import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { Clock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { EventBus, EventOrigin } from '../core/event-bus.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, RunInput } from '../core/messages.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import type { AgentMachineInput, GuardrailPlan } from '../machines/agent.ts';
import type { ResolvedPii } from '../pii/pii-options.ts';
import { attachPii } from '../pii/pii-run.ts';
import { checkReachablePrices } from '../resources/priced-agents.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources, type ResourceCaller, type RunResourceOptions } from '../resources/resource-run.ts';
import { countRuntime, deltaForwarder, type RunRuntime } from './run-runtime.ts';

/**
 * The run host: how every entry point (run and stream, sessions, agents used as tools, handoffs, parallel groups,
 * Restate turns) starts an agent. Each entry point says where the agent runs (its bus, clock, place in the session,
 * durability, budgets, people who decide); the host builds the one runtime object the agent's effects use and the
 * machine input, and emits the run's start the same way everywhere. Every cross-cutting feature reaches an agent
 * through the runtime made here: a feature added to it applies on every entry point at once.
 */

/** What an entry point says about an agent run; the host adds the rest (its delta forwarder, its counters). */
export type AgentRunSpec = Omit<RunRuntime, 'onDelta' | 'nestedSteps' | 'toolBatch'>;

/** A live agent run: its runtime, counted among the live runs until released (once). */
export class HostedRun {
  readonly runtime: RunRuntime;
  #live = true;

  constructor(runtime: RunRuntime) {
    this.runtime = runtime;
  }

  /** Counts the run out; call once the agent's actor has stopped (later calls do nothing). */
  release(): void {
    if (!this.#live) return;
    this.#live = false;
    countRuntime(-1);
  }
}

/**
 * Makes an agent run's runtime. Getters in `spec` (a session's turn and run context change while it runs) are kept
 * as getters: the spec object itself becomes the runtime.
 */
export function hostAgent(spec: AgentRunSpec): HostedRun {
  return new HostedRun(hostRuntime(spec));
}

/**
 * The runtime of `hostAgent`, for an entry point that counts the run out itself: it calls `countRuntime(-1)` once,
 * when the agent's actor has stopped (a plain run's observer does, so the run keeps no release object of its own).
 * `listenable`: whether the bus can have listeners during the run; a bus that never will gets no delta forwarder
 * (a closure per run that would only find nobody listening).
 */
export function hostRuntime(spec: AgentRunSpec, listenable = true): RunRuntime {
  const runtime = spec as RunRuntime;
  runtime.onDelta = listenable ? deltaForwarder(spec.bus, spec.agent.name, spec.origin) : ignoreDelta;
  runtime.nestedSteps = 0;
  // Set here, not first by the tool gate: every runtime has the field from its start (one shape).
  runtime.toolBatch = undefined;
  runtime.plainCalls = undefined;
  countRuntime(1);
  return runtime;
}

/** The delta forwarder of a run whose bus has no listener and will not get one. */
function ignoreDelta(): void {}

/** The agent machine's input for a run of `agent` over `history` (the caller's, then this run's user message). */
export function agentInput(
  agent: Agent<unknown>,
  key: string,
  history: Message[],
  baseLength: number,
): AgentMachineInput {
  const input: AgentMachineInput = {
    sessionId: key,
    agent: agent.name,
    limits: agent.limits,
    toolNames: agent.tools.names,
    hasOutputSchema: agent.outputSchema !== undefined,
    history,
    baseLength,
  };
  // Absent for an agent without guardrails (its machine input is what it was before they existed).
  if (agent.guardrails) input.guardrails = guardrailInput(agent.guardrails).guardrails as GuardrailPlan;
  return input;
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

/** What a run, group or session draws on: its budgets, masking and audit log, as its entry point was given them. */
export interface RunScopeSpec {
  /** The run's (or session's, or group's) id: its budget scope and its bus's session id. */
  sessionId: string;
  bus: EventBus;
  clock: Clock;
  /** The agents that start here, the entry first: every model they can reach needs a price under a USD budget. */
  agents: readonly Agent<unknown>[];
  /** Agents known by name (handoff targets given as strings). */
  known?: ReadonlyMap<string, Agent<unknown>> | undefined;
  resources: RunResourceOptions;
  /** The run that starts this one: its budgets, when the options name none. */
  caller?: ResourceCaller | undefined;
  /** Masking of personal data in the bus's events (and model requests); absent: none. */
  pii?: ResolvedPii | undefined;
  /** The audit log every event of the bus is recorded in; absent: none. */
  audit?: AuditLog | undefined;
}

/** What a run scope opened: the manager its model calls reserve from, and what closes the scope (once). */
export interface OpenedRunScope {
  resources: ResourceManager | undefined;
  close: () => void;
}

const nothingOpened: OpenedRunScope = Object.freeze({ resources: undefined, close: () => undefined });

/**
 * The scope of a run that attaches nothing (no masking, no audit log, no budget or resource manager of its own or
 * its caller's), as openRunScope would open it, without its spec being built: undefined when there is something
 * to open (or to check: `pii` is the option as given).
 */
export function emptyRunScope(
  resources: RunResourceOptions,
  caller: ResourceCaller | undefined,
  pii: unknown,
  audit: AuditLog | undefined,
): OpenedRunScope | undefined {
  if (pii !== undefined || audit !== undefined || caller?.resources !== undefined) return undefined;
  if (
    resources.resources !== undefined ||
    resources.budget !== undefined ||
    resources.parentScope !== undefined
  )
    return undefined;
  return nothingOpened;
}

/**
 * Attaches a run's cross-cutting features to its bus before anything runs: personal-data masking, the audit log,
 * and the budget scope (every reachable model priced under a USD budget, the run's own budget opened under its
 * caller's). Throws a ConfigError for what cannot apply, leaving nothing attached.
 */
export function openRunScope(spec: RunScopeSpec): OpenedRunScope {
  const { sessionId, bus, clock, agents } = spec;
  const entry = agents[0];
  if (!entry) throw new ConfigError('a run needs an agent.');
  attachPii(bus, spec.pii);
  checkReachablePrices(agents, spec.resources, { sessionId, caller: spec.caller, known: spec.known });
  const attached = attachResources(spec.resources, spec.caller, {
    sessionId,
    agent: entry.name,
    provider: entry.model.provider,
    model: entry.model.model,
    clock,
    bus,
  });
  const audit = spec.audit;
  // Most runs attach neither: they share one scope that has nothing to close.
  if (!attached && !audit) return nothingOpened;
  const stopAuditing = audit ? bus.subscribe((event) => audit.observe(event)) : undefined;
  let open = true;
  return {
    resources: attached?.manager,
    close: () => {
      if (!open) return;
      open = false;
      stopAuditing?.();
      attached?.detach();
    },
  };
}
