import type { Agent } from '../agent/define-agent.ts';
import { systemClock } from '../core/clock.ts';
import type { RunEvent } from '../core/events.ts';
import type { RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import type { InspectObserver } from '../run/inspect.ts';
import { defaultEnvironment, type SessionOptions, startSession } from './session.ts';

const needs = new WeakMap<object, boolean>();

/**
 * Whether `run()` must go through a session supervisor: the agent can hand off, or has a fatal tool (which only a
 * supervisor can restart). A plain agent keeps the single-actor hot path.
 */
export function needsSession(agent: Agent<unknown>): boolean {
  let answer = needs.get(agent);
  if (answer === undefined) {
    answer =
      agent.handoffs.length > 0 || agent.tools.names.some((name) => agent.tools.find(name)?.fatal === true);
    needs.set(agent, answer);
  }
  return answer;
}

export interface SessionRunOptions
  extends Pick<SessionOptions, 'history' | 'signal' | 'budget' | 'tenant' | 'parentScope'> {
  sessionId?: string | undefined;
  resources?: import('../resources/resource-manager.ts').ResourceManager | undefined;
  clock?: import('../core/clock.ts').Clock | undefined;
  inspect?: InspectObserver | undefined;
}

/**
 * One turn on a private session that closes when the turn ends: `run()` and `stream()` of an agent with handoffs.
 * Throws a ConfigError for bad input, like `run` rejects.
 */
export function runInSession<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: SessionRunOptions,
): { sessionId: string; result: Promise<RunResult<TOutput>>; events: AsyncIterable<RunEvent> } {
  const environment = defaultEnvironment(options.clock ?? systemClock);
  if (options.inspect) environment.inspect = options.inspect;
  const sessionOptions: SessionOptions = {};
  if (options.sessionId !== undefined) sessionOptions.id = options.sessionId;
  if (options.history !== undefined) sessionOptions.history = options.history;
  if (options.signal !== undefined) sessionOptions.signal = options.signal;
  if (options.budget !== undefined) sessionOptions.budget = options.budget;
  if (options.tenant !== undefined) sessionOptions.tenant = options.tenant;
  if (options.parentScope !== undefined) sessionOptions.parentScope = options.parentScope;
  if (options.resources !== undefined) environment.resources = options.resources;
  const session = startSession(agent, input, sessionOptions, environment);
  const events = session.events();
  const result = session.result.then(async (value) => {
    await session.stop();
    return value;
  });
  return { sessionId: session.id, result, events };
}
