import type { Agent } from '../agent/define-agent.ts';
import { auditConfigError } from '../audit/audit-log.ts';
import type { RunEvent } from '../core/events.ts';
import type { RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import {
  auditOf,
  type NestedPlacement,
  type RunOptions,
  type RunStream,
  startRun,
  stepsFrom,
  streamRun,
} from '../run/run.ts';
import type { OptionsWithContext } from '../run/run-context.ts';
import { checkRunArguments } from '../run/run-options.ts';
import { needsSession, runInSession } from './session-run.ts';

/*
 * run() and stream(): the one-call entry points. A plain agent runs on the run host's single-actor path; an agent
 * that needs a supervisor (handoffs, fatal tools) or people (approvals, permission policies) runs the same way in a
 * private session that closes when its turn ends.
 */

/** The options of a call given none: one object for all such calls (read only, like every options object). */
const noOptions: RunOptions = Object.freeze({});

/**
 * Runs an agent to the end and resolves with its one typed result. It rejects only for bad input (a ConfigError
 * or HistoryValidationError before anything runs); everything that happens during the run is in the result.
 */
export function run<TOutput, TContext = unknown>(
  agent: Agent<TOutput, TContext>,
  input: RunInput,
  ...given: OptionsWithContext<RunOptions, NoInfer<TContext>>
): Promise<RunResult<TOutput>> {
  const options: RunOptions = given[0] === undefined ? noOptions : given[0];
  try {
    checkRunArguments(agent, input, options, 'run()');
    // Handoffs and fatal tools need a session supervisor; a plain agent keeps the one-actor hot path.
    if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>))
      return auditedResult(runInSession(agent, input, options).result, options);
    // The run's own result promise, handed back as it is: it never rejects, and an async frame around it would
    // stay alive (with its promise and reaction) for as long as the run is in flight.
    return startRun(agent, input, options).result;
  } catch (error) {
    return auditedResult(Promise.reject(error), options);
  }
}

/** Only bad input rejects (a run's result promise never does): a ConfigError goes to the audit log. */
async function auditedResult<T>(result: Promise<T>, options: RunOptions): Promise<T> {
  try {
    return await result;
  } catch (error) {
    auditConfigError(auditOf(options), 'run()', error);
    throw error;
  }
}

/**
 * Starts a run and returns its events as an AsyncIterable (from run_start to run_end), buffered from the start so
 * nothing is missed, plus the `result` promise. Throws at once for bad input, like `run` rejects.
 */
export function stream<TOutput, TContext = unknown>(
  agent: Agent<TOutput, TContext>,
  input: RunInput,
  ...given: OptionsWithContext<RunOptions, NoInfer<TContext>>
): RunStream<TOutput> {
  return streamPlaced(agent as Agent<TOutput>, input, given[0] === undefined ? noOptions : given[0]);
}

/** `stream()`, for a nested run placed in its caller's session (`placement`) when the run needs no session. */
export function streamPlaced<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions,
  placement?: NestedPlacement,
): RunStream<TOutput> {
  try {
    checkRunArguments(agent, input, options, 'stream()');
  } catch (error) {
    auditConfigError(auditOf(options), 'stream()', error);
    throw error;
  }
  if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>)) {
    const session = runInSession(agent, input, options, placement);
    const events = stoppingOnReturn(session.events, () =>
      session.stop('the stream was closed before the run ended'),
    );
    return {
      sessionId: session.sessionId,
      result: session.result,
      [Symbol.asyncIterator]: () => events[Symbol.asyncIterator](),
      steps: () => stepsFrom(events, session.result),
    };
  }
  return streamRun(agent, input, options, placement);
}

/**
 * The events of a run in a private session, read once: a reader that stops before the last one (a `break` out of
 * `for await`, or a throw in its body) stops the session, so that its tools and model stop spending.
 */
function stoppingOnReturn(
  events: AsyncIterable<RunEvent>,
  stop: () => Promise<void>,
): AsyncIterable<RunEvent> {
  return {
    [Symbol.asyncIterator]: () => {
      const inner = events[Symbol.asyncIterator]();
      let done = false;
      return {
        next: async () => {
          const step = await inner.next();
          if (step.done) done = true;
          return step;
        },
        return: async () => {
          if (!done) {
            done = true;
            void stop();
          }
          return (await inner.return?.()) ?? { value: undefined, done: true };
        },
      };
    },
  };
}
