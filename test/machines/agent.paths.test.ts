import { describe, expect, it } from 'vitest';
import { type InspectionEvent, SimulatedClock, type Snapshot } from 'xstate';
import { z } from 'zod';
import { defineAgent, type GuardrailOptions, type GuardrailVerdict, run, tool } from '../../src/index.ts';
import type { AgentEvent } from '../../src/machines/agent.ts';
import { type PathCoverage, pathCoverage } from '../../src/testing/path-coverage.ts';
import { type ScriptedTurn, scriptedModel } from '../../src/testing/scripted-model.ts';
import { allTransitions, generatePaths, type PathConfig, pathConfigs, pathResources } from './agent-paths.ts';

/**
 * Tests generated from the agent statechart (REQUIREMENTS V1): xstate/graph enumerates shortest paths to every
 * (state, incoming transition) under small limits; each path is then replayed on the REAL runtime (the provided
 * machine, the effects actor, the scripted model and a real tool), and the run must end in the state the path
 * predicts. The microsteps the real runs take must cover every transition of the machine definition, so a new state
 * or transition without a path fails this suite.
 */

interface Replay {
  finalValue: unknown;
  stopReason: string | null;
}

/** Runs the real loop so that the model, the tools and the control events follow the path's events in order. */
async function replay(config: PathConfig, events: AgentEvent[], coverage: PathCoverage): Promise<Replay> {
  const clock = new SimulatedClock();
  const controller = new AbortController();
  let lastSnapshot: Snapshot<unknown> & { value?: unknown; context?: { stopReason: string | null } } = {
    status: 'active',
    output: undefined,
    error: undefined,
  };
  let cursor = 0;
  let exhaustedValue: unknown;

  // Abort and timeout arrive while an effect is in flight, as they would in production.
  const interrupt = (event: AgentEvent) => {
    setTimeout(() => {
      if (event.type === 'abort') controller.abort();
      else clock.increment(1e9);
    }, 0);
  };
  const takeNext = (): AgentEvent | undefined => {
    const event = events[cursor++];
    if (event === undefined) {
      // The path ends in a non-final state: remember where the machine is, then stop the run.
      // Read the state once the current macrostep has been published, then stop the run.
      setTimeout(() => {
        exhaustedValue = lastSnapshot.value;
        controller.abort();
      }, 0);
    }
    return event;
  };

  const t = tool({
    name: 't',
    description: 'test tool',
    input: z.object({ n: z.number() }),
    execute: (_args, ctx) => {
      const event = takeNext();
      if (event?.type === 'tools.done') {
        if (event.results[0]?.degraded) throw new Error('failed');
        // The tool-output guardrail blocks this result.
        if (event.results[0]?.blocked) return 'BLOCKME';
        return 'ok';
      }
      if (event) interrupt(event);
      return new Promise((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
      );
    },
  });

  const model = scriptedModel((): ScriptedTurn => {
    const event = takeNext();
    if (event?.type === 'model.response') {
      const r = event.response;
      const turn: ScriptedTurn = { text: r.text, toolCalls: r.toolCalls, usage: r.usage };
      if (r.stopReason !== undefined && r.stopReason !== 'unknown') turn.stopReason = r.stopReason;
      if (r.reasoning) turn.reasoning = r.reasoning;
      if (r.refusal !== undefined) turn.refusal = r.refusal;
      return turn;
    }
    if (event?.type === 'model.error') return { error: event.error.message };
    // The streaming output guardrail blocks this text as it streams.
    if (event?.type === 'guardrail.blocked') return { deltas: ['BLOCKME'] };
    if (event?.type === 'tools.done')
      throw new Error(`path mismatch: tools.done at a model call (step ${cursor})`);
    if (event) interrupt(event);
    return { delayMs: 1e9 };
  });

  // A guardrail state's check plays the path's next event: a check that allows or blocks, or an interruption.
  const pathCheck = (
    _value: unknown,
    info: { signal: AbortSignal },
  ): GuardrailVerdict | Promise<GuardrailVerdict> => {
    const event = takeNext();
    if (event?.type === 'guardrails.done')
      return event.blocked ? { decision: 'block', message: event.blocked.message } : { decision: 'allow' };
    if (event) interrupt(event);
    return new Promise((_resolve, reject) =>
      info.signal.addEventListener('abort', () => reject(info.signal.reason)),
    );
  };
  const blockMarked = (_value: unknown, { text }: { text: string }): GuardrailVerdict =>
    text.includes('BLOCKME') ? { decision: 'block', message: 'marked' } : { decision: 'allow' };
  const guarded = (options: Omit<GuardrailOptions, 'timeoutMs'>): GuardrailOptions => ({
    ...options,
    timeoutMs: null,
  });
  const guardrails = config.guardrails
    ? {
        input: [
          guarded({ name: 'input', check: pathCheck }),
          guarded({ name: 'parallel', mode: 'parallel', check: () => ({ decision: 'allow' }) }),
        ],
        output: [
          guarded({ name: 'output', check: pathCheck }),
          guarded({ name: 'streaming', streaming: true, check: blockMarked }),
        ],
        toolOutput: [guarded({ name: 'tool-output', check: blockMarked })],
      }
    : undefined;

  const agent = defineAgent({
    name: 'pathfinder',
    instructions: '',
    model,
    ...(guardrails ? { guardrails } : {}),
    tools: config.tools ? [t] : [],
    ...(config.schema ? { output: z.object({ x: z.number() }) } : {}),
    limits: { ...config.limits, timeoutMs: 1e9, toolTimeoutMs: undefined },
  });

  const inspect = (event: InspectionEvent) => {
    coverage.inspect(event);
    // Only the agent machine itself (the root), not its effects actor.
    if (event.rootId === event.actorRef.sessionId && event.type === '@xstate.snapshot')
      lastSnapshot = event.snapshot as typeof lastSnapshot;
  };

  // A path's model.denied is played by the resource manager, before the model is asked.
  const resources = pathResources(
    () => events[cursor],
    () => cursor++,
    clock,
  );
  const result = await run(agent, 'go', { signal: controller.signal, clock, inspect, resources });
  return {
    finalValue: exhaustedValue ?? lastSnapshot.value,
    stopReason: exhaustedValue === undefined ? result.stopReason : null,
  };
}

describe('agent statechart: generated paths replayed on the real runtime', () => {
  const coverage = pathCoverage();
  let replayed = 0;

  for (const config of pathConfigs) {
    it(`every shortest path ends where the statechart says (${config.name})`, async () => {
      const paths = generatePaths(config);
      expect(paths.length).toBeGreaterThan(10);
      for (const path of paths) {
        const events = path.steps.slice(1).map((step) => step.event);
        const outcome = await replay(config, events, coverage);
        const description = JSON.stringify(events);
        expect(outcome.finalValue, description).toEqual(path.state.value);
        if (path.state.status === 'done')
          expect(outcome.stopReason, description).toBe(path.state.context.stopReason);
        replayed++;
      }
    });
  }

  it('the replayed runs visit every state and every transition of the machine definition', () => {
    expect(replayed).toBeGreaterThan(100);
    const report = coverage.report();
    expect(report.transitions.missed).toEqual([]);
    expect(report.states.missed).toEqual([]);
    expect(report.transitions.total).toBe(allTransitions().length);
  });
});
