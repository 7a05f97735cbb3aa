import type { AnyActorRef, SnapshotFrom } from 'xstate';
import type { Phase, RunEventData, RunEventType } from '../core/events.ts';
import type { AgentMachine } from '../machines/agent.ts';
import { runtimeOfAgent } from './run-runtime.ts';

type AgentSnapshot = SnapshotFrom<AgentMachine>;

/** Maps the machine's state value to the loop phase and the sub-state within it. */
export function phaseOf(value: AgentSnapshot['value']): [Phase, string] {
  if (typeof value === 'string') return [value as Phase, value];
  const running = (value as { running?: unknown }).running;
  if (typeof running === 'string') return [running === 'finalOutput' ? 'finalOutput' : 'toolUse', running];
  const inner = running as Record<string, string>;
  if (Object.hasOwn(inner, 'finalOutput')) return ['finalOutput', inner.finalOutput ?? ''];
  return ['toolUse', inner.toolUse ?? ''];
}

/**
 * Turns an agent's snapshots into `phase` events (one per change of phase or sub-state) and `decode_retry` events
 * (each time the final answer failed to decode and the model is asked again).
 */
export class PhaseReporter {
  #lastValue: unknown;
  #lastPhase = '';
  #retries = 0;
  readonly #emit: <T extends RunEventType>(type: T, data: RunEventData[T]) => void;

  constructor(emit: <T extends RunEventType>(type: T, data: RunEventData[T]) => void, retries = 0) {
    this.#emit = emit;
    this.#retries = retries;
  }

  observe(snapshot: AgentSnapshot): void {
    const { context } = snapshot;
    // Checked before the phase: a retry goes from callingModel back to callingModel, the same state value.
    if (context.retryCount > this.#retries) {
      this.#retries = context.retryCount;
      this.#emit('decode_retry', {
        retryCount: context.retryCount,
        error: context.answer.decodeError ?? 'the answer did not decode',
      });
    }
    // The compiled machine shares one state value object per configuration: an unchanged value is no new phase.
    if (snapshot.value === this.#lastValue) return;
    this.#lastValue = snapshot.value;
    const [phase, state] = phaseOf(snapshot.value);
    const key = `${phase}.${state}`;
    if (key === this.#lastPhase) return;
    this.#lastPhase = key;
    this.#emit('phase', { phase, state, step: context.step, retryCount: context.retryCount });
  }
}

/**
 * Lets the effects of the agent actor `actor` report its phase through `phases` before they act on a command (see
 * `RunRuntime.phases`), so that a phase's events come before what the phase does, on every entry point.
 */
export function reportPhaseBeforeEffects(actor: AnyActorRef, phases: PhaseReporter): void {
  const snapshot = actor.getSnapshot() as AgentSnapshot;
  const runtime = runtimeOfAgent(actor, snapshot.context.config.sessionId);
  if (runtime) runtime.phases = { reportPhase: () => phases.observe(actor.getSnapshot() as AgentSnapshot) };
}
