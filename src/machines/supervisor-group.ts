import { enqueueActions, setup } from 'xstate';
import type { ErrorInfo } from '../core/errors.ts';
import { type AgentMachineInput, type AgentMachineOutput, agentMachine } from './agent.ts';

/**
 * A group supervisor, behind `parallel` (several agents on one task, their answers merged): runs the agents side
 * by side as its children (explicit ids, each stopped as soon as it is done) and ends when every one has ended,
 * with each one's final context or failure. A member's failure does not stop the others. Pure: the runtime
 * (src/sessions/parallel.ts) provides the agent logic with its effects, and sends `abort` / `timeout` on the
 * caller's behalf.
 */

export interface GroupMember {
  /** The child's id; unique within the group. */
  id: string;
  input: AgentMachineInput;
}

export interface GroupInput {
  members: GroupMember[];
}

export interface GroupContext {
  members: GroupMember[];
  outputs: Record<string, AgentMachineOutput>;
  failures: Record<string, ErrorInfo>;
  remaining: number;
}

export type GroupEvent =
  | { type: 'abort'; reason?: string }
  | { type: 'timeout'; id: string }
  | { type: `xstate.done.actor.${string}`; actorId: string; output: AgentMachineOutput }
  | { type: `xstate.error.actor.${string}`; actorId: string; error: unknown };

function isMember(context: GroupContext, id: string | undefined): id is string {
  return (
    id !== undefined &&
    context.members.some((member) => member.id === id) &&
    !(id in context.outputs) &&
    !(id in context.failures)
  );
}

export const groupMachine = setup({
  types: {
    context: {} as GroupContext,
    events: {} as GroupEvent,
    input: {} as GroupInput,
    output: {} as GroupContext,
  },
  actors: { agent: agentMachine },
  guards: {
    allEnded: ({ context }) => context.remaining === 0,
    memberEvent: ({ context, event }) => isMember(context, 'actorId' in event ? event.actorId : undefined),
  },
  actions: {
    startMembers: enqueueActions(({ context, enqueue }) => {
      for (const member of context.members)
        enqueue.spawnChild('agent', { id: member.id, input: member.input });
    }),
    recordDone: enqueueActions(({ context, event, enqueue }) => {
      if (!('output' in event) || !('actorId' in event)) return;
      enqueue.assign({
        outputs: { ...context.outputs, [event.actorId]: event.output },
        remaining: context.remaining - 1,
      });
      enqueue.stopChild(event.actorId);
    }),
    recordFailure: enqueueActions(({ context, event, enqueue }) => {
      if (!('error' in event) || !('actorId' in event)) return;
      const error = event.error;
      const message = error instanceof Error ? error.message : String(error);
      enqueue.assign({
        failures: {
          ...context.failures,
          [event.actorId]: {
            name: error instanceof Error ? error.name : 'Error',
            code: 'agent_crashed',
            message,
          },
        },
        remaining: context.remaining - 1,
      });
      enqueue.stopChild(event.actorId);
    }),
    abortMembers: enqueueActions(({ context, event, enqueue }) => {
      const reason = event.type === 'abort' && event.reason ? event.reason : 'the group was aborted';
      for (const member of context.members) {
        if (isMember(context, member.id)) enqueue.sendTo(member.id, { type: 'abort', reason });
      }
    }),
    timeoutMember: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'timeout' && isMember(context, event.id))
        enqueue.sendTo(event.id, { type: 'timeout' });
    }),
  },
}).createMachine({
  id: 'group',
  context: ({ input }) => ({
    members: input.members,
    outputs: {},
    failures: {},
    remaining: input.members.length,
  }),
  initial: 'running',
  states: {
    running: {
      entry: 'startMembers',
      always: { guard: 'allEnded', target: 'done' },
      on: {
        'xstate.done.actor.*': { guard: 'memberEvent', actions: 'recordDone' },
        // An error event left unhandled would fail the group itself: one from an actor that is not a pending
        // member (it already ended) is taken and ignored.
        'xstate.error.actor.*': [{ guard: 'memberEvent', actions: 'recordFailure' }, { actions: [] }],
        abort: { actions: 'abortMembers' },
        timeout: { actions: 'timeoutMember' },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => context,
});

export type GroupMachine = typeof groupMachine;
