import { compileMachine } from '../engine/compiled-machine.ts';
import { type AgentMachine, agentMachine } from '../machines/agent.ts';
import { withEffects } from './effects.ts';

let built: AgentMachine | undefined;

/**
 * The agent machine as every runner uses it: with its effects (src/run/effects.ts), on the compiled interpreter
 * (src/engine).
 * Built on the first run rather than when Troupe is imported, once, and shared by run(), sessions and groups
 * (provide() and compilation are not free).
 */
export function runtimeAgentMachine(): AgentMachine {
  built ??= withEffects(compileMachine(agentMachine));
  return built;
}
