import { compileMachine } from '../engine/compiled-machine.ts';
import { type AgentMachine, agentMachine } from '../machines/agent.ts';
import { effectsLogic } from './effects.ts';

/**
 * The agent machine as every runner uses it: the real effects actor, on the compiled interpreter (src/engine).
 * Built once and shared by run(), sessions and groups (provide() and compilation are not free).
 */
export const runtimeAgentMachine: AgentMachine = compileMachine(
  agentMachine.provide({ actors: { effects: effectsLogic } }),
);
