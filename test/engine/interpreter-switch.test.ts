import { createAgentSystem, defineAgent, parallel, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it, vi } from 'vitest';
import type { AnyActorLogic, InspectionEvent } from 'xstate';
import { isCompiledMachine } from '../../src/engine/compiled-machine.ts';
import { restateSessionMachine } from '../../src/restate/turn-session.ts';
import { runtimeAgentMachine } from '../../src/run/runtime-agent-machine.ts';

/**
 * The switch between the two interpreters the behavioural tests run on (vitest.config.ts runs them once per
 * project): under TROUPE_INTERPRETER=xstate no machine of a run, a session or a group is compiled; otherwise every
 * one is. Checked on the actors XState reports to an inspector, so a runner that built its machine another way
 * would show.
 */

const onXState = process.env.TROUPE_INTERPRETER === 'xstate';

// Observers get snapshot-only views of actors; this test looks at the actors themselves, so the redacting layer
// hands inspection events on as they are.
vi.mock('../../src/run/inspect.ts', async (original) => ({
  ...(await original<typeof import('../../src/run/inspect.ts')>()),
  redactingInspector: (target: (event: InspectionEvent) => void) => target,
}));

/** The ids of the state machines whose actors an inspected piece of work started, with whether each is compiled. */
function machineWatcher() {
  const machines = new Map<string, boolean>();
  const inspect = (event: InspectionEvent) => {
    if (event.type !== '@xstate.actor') return;
    // Inspection hands out the actor itself (ActorRefLike in XState's types), and the actor holds its logic.
    const { logic } = event.actorRef as unknown as { logic: AnyActorLogic & { id?: string; root?: unknown } };
    if (logic.root !== undefined && typeof logic.id === 'string')
      machines.set(logic.id, isCompiledMachine(logic));
  };
  return { machines, inspect };
}

describe(`the runtime machines run on ${onXState ? "XState's interpreter" : 'the compiled interpreter'}`, () => {
  it('the shared machines', () => {
    expect(isCompiledMachine(runtimeAgentMachine())).toBe(!onXState);
    expect(isCompiledMachine(restateSessionMachine())).toBe(!onXState);
  });

  it('a run, a session and a parallel group', async () => {
    const watcher = machineWatcher();
    const agent = (name: string) =>
      defineAgent({ name, instructions: '', model: scriptedModel([{ text: 'ok' }]) });

    await run(agent('solo'), 'hi', { inspect: watcher.inspect });
    const system = createAgentSystem({ inspect: watcher.inspect });
    await system.spawn(agent('talker'), 'hi').result;
    await system.shutdown();
    await parallel([agent('one'), agent('two')], { merge: 'concat' }).run('hi', { inspect: watcher.inspect });

    expect([...watcher.machines.keys()].sort()).toEqual(['agent', 'group', 'session']);
    for (const [id, compiled] of watcher.machines) expect(compiled, id).toBe(!onXState);
  });
});
