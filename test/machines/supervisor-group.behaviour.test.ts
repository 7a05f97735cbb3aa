import { describe, expect, it } from 'vitest';
import { createActor, fromCallback } from 'xstate';
import { defaultLimits } from '../../src/core/limits.ts';
import {
  type AgentMachineInput,
  type AgentMachineOutput,
  agentMachine,
  agentOutputOf,
} from '../../src/machines/agent.ts';
import { type GroupEvent, groupMachine } from '../../src/machines/supervisor-group.ts';

/**
 * The group supervisor behind `parallel`, driven by hand: members are inert children, the test says when each one
 * ends. What it must do: start every member, keep each one's output or failure, stop a member once it ended, pass
 * abort and timeout on to the members still running, and end when every member has ended.
 */

function memberInput(agent: string): AgentMachineInput {
  return {
    sessionId: `g/${agent}`,
    agent,
    limits: defaultLimits,
    toolNames: [],
    hasOutputSchema: false,
    history: [{ role: 'user', content: 'task' }],
    baseLength: 0,
  };
}

const outputFor = (agent: string, text: string): AgentMachineOutput => ({
  ...agentOutputOf(createActor(agentMachine, { input: memberInput(agent) }).getSnapshot().context),
  text,
  stopReason: 'completed',
});

function start(ids: string[]) {
  const started: { id: string; input: AgentMachineInput }[] = [];
  const received: { id: string; event: unknown }[] = [];
  const agent = fromCallback<{ type: string }, AgentMachineInput>(({ input, self, receive }) => {
    started.push({ id: self.id, input });
    receive((event) => received.push({ id: self.id, event }));
  });
  const actor = createActor(
    groupMachine.provide({ actors: { agent: agent as unknown as typeof agentMachine } }),
    {
      input: { members: ids.map((id) => ({ id, input: memberInput(id) })) },
    },
  );
  let failure: unknown;
  actor.subscribe({ error: (error) => (failure = error) });
  actor.start();
  return {
    started,
    received,
    send: (event: GroupEvent) => actor.send(event),
    done: (id: string, text = `${id} says`) =>
      actor.send({ type: `xstate.done.actor.${id}`, actorId: id, output: outputFor(id, text) }),
    fail: (id: string, error: unknown) =>
      actor.send({ type: `xstate.error.actor.${id}`, actorId: id, error }),
    snapshot: () => {
      if (failure !== undefined) throw failure;
      return actor.getSnapshot();
    },
  };
}

describe('group supervisor', () => {
  it('starts every member with its input and ends with every output once all are done', () => {
    const g = start(['a', 'b']);
    expect(g.started).toEqual([
      { id: 'a', input: memberInput('a') },
      { id: 'b', input: memberInput('b') },
    ]);
    g.done('a');
    expect(g.snapshot().status).toBe('active');
    expect(g.snapshot().children.a).toBeUndefined();
    expect(g.snapshot().children.b).toBeDefined();
    g.done('b', 'b answers');
    const snapshot = g.snapshot();
    expect(snapshot.status).toBe('done');
    expect(snapshot.output?.remaining).toBe(0);
    expect(snapshot.output?.failures).toEqual({});
    expect(snapshot.output?.outputs.a?.text).toBe('a says');
    expect(snapshot.output?.outputs.b?.text).toBe('b answers');
  });

  it('keeps a member’s failure and lets the others finish', () => {
    const g = start(['a', 'b', 'c']);
    g.fail('a', new RangeError('out of range'));
    g.fail('b', 'plain');
    expect(g.snapshot().status).toBe('active');
    expect(g.snapshot().children.a).toBeUndefined();
    g.done('c');
    const output = g.snapshot().output;
    expect(output?.failures).toEqual({
      a: { name: 'RangeError', code: 'agent_crashed', message: 'out of range' },
      b: { name: 'Error', code: 'agent_crashed', message: 'plain' },
    });
    expect(Object.keys(output?.outputs ?? {})).toEqual(['c']);
  });

  it('ignores a second end of a member and events of actors that are not members', () => {
    const g = start(['a', 'b']);
    g.done('a', 'first');
    g.done('a', 'second');
    g.fail('a', new Error('late'));
    g.done('stranger');
    g.fail('stranger', new Error('x'));
    const snapshot = g.snapshot();
    expect(snapshot.status).toBe('active');
    expect(snapshot.context.remaining).toBe(1);
    expect(snapshot.context.outputs.a?.text).toBe('first');
    expect(snapshot.context.failures).toEqual({});
  });

  it('passes abort on to the members still running, with the reason', () => {
    const g = start(['a', 'b', 'c']);
    g.done('b');
    g.send({ type: 'abort', reason: 'caller gave up' });
    expect(g.received).toEqual([
      { id: 'a', event: { type: 'abort', reason: 'caller gave up' } },
      { id: 'c', event: { type: 'abort', reason: 'caller gave up' } },
    ]);
    g.send({ type: 'abort' });
    expect(g.received.at(-1)).toEqual({ id: 'c', event: { type: 'abort', reason: 'the group was aborted' } });
  });

  it('sends a timeout to the one member it names, if it still runs', () => {
    const g = start(['a', 'b']);
    g.send({ type: 'timeout', id: 'b' });
    g.done('a');
    g.send({ type: 'timeout', id: 'a' });
    g.send({ type: 'timeout', id: 'nobody' });
    expect(g.received).toEqual([{ id: 'b', event: { type: 'timeout' } }]);
  });

  it('a group without members is done at once', () => {
    const g = start([]);
    expect(g.snapshot().status).toBe('done');
  });
});
