import { compileMachine } from '../engine/compiled-machine.ts';
import { type SessionMachine, sessionMachine } from '../machines/session.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';
import { type SessionEffectsHost, sessionEffectsLogic } from '../sessions/session-effects.ts';

/** What the session machine's effects ask of the turn that runs it. */
export type CheckpointSource = SessionEffectsHost;

let built: SessionMachine | undefined;

/** The session machine with the real agent runtime and the turn's effects; built once, on the first turn. */
export function restateSessionMachine(): SessionMachine {
  built ??= compileMachine(
    sessionMachine.provide({ actors: { agent: runtimeAgentMachine(), sessionEffects: sessionEffectsLogic } }),
  );
  return built;
}
