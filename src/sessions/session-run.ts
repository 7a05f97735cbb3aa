import type { Agent } from '../agent/define-agent.ts';
import type { ApprovalDecision, ApprovalHandler } from '../core/approvals.ts';
import { systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { resolvePii } from '../pii/pii-options.ts';
import { parentScopeOf, sharedManagerOf } from '../resources/resource-run.ts';
import type { InspectObserver } from '../run/inspect.ts';
import type { NestedPlacement, RunOptions } from '../run/run.ts';
import { callerOf } from '../run/run-runtime.ts';
import { defaultEnvironment, type Session, type SessionOptions, startSession } from './session.ts';

const supervised = new WeakMap<object, boolean>();
const asking = new WeakMap<object, string | null>();

/**
 * Whether the agent needs a session supervisor: it can hand off, or has a fatal tool (which only a supervisor can
 * restart).
 */
export function needsSupervisor(agent: Agent<unknown>): boolean {
  let answer = supervised.get(agent);
  if (answer === undefined) {
    answer =
      agent.handoffs.length > 0 || agent.tools.names.some((name) => agent.tools.find(name)?.fatal === true);
    supervised.set(agent, answer);
  }
  return answer;
}

/** The first tool of the agent or of an agent it hands off to that waits for people (approval, askHuman), or null. */
export function toolAskingPeople(agent: Agent<unknown>, visited?: Set<Agent<unknown>>): string | null {
  const known = asking.get(agent);
  if (known !== undefined) return known;
  // Made after the cache is asked, not as a default parameter: every run() asks, and the answer is cached.
  const seen = visited ?? new Set<Agent<unknown>>();
  if (seen.has(agent)) return null;
  seen.add(agent);
  let found: string | null = null;
  for (const name of agent.tools.names) {
    const candidate = agent.tools.find(name);
    if (candidate && (candidate.asksHuman === true || candidate.needsApproval !== false)) {
      found = `${agent.name}.${name}`;
      break;
    }
  }
  for (const target of agent.handoffs)
    if (found === null && typeof target !== 'string')
      found = toolAskingPeople(target as Agent<unknown>, seen);
  asking.set(agent, found);
  return found;
}

/**
 * Whether `run()` must go through a session: the agent needs a supervisor, or has tools that wait for people (a
 * session pauses for them). A plain agent keeps the single-actor hot path.
 */
export function needsSession(agent: Agent<unknown>): boolean {
  return needsSupervisor(agent) || toolAskingPeople(agent) !== null || agent.permissions !== undefined;
}

export type { ApprovalHandler } from '../core/approvals.ts';

export interface SessionRunOptions
  extends Pick<SessionOptions, 'context' | 'history' | 'signal' | 'budget' | 'tenant' | 'parentScope'> {
  sessionId?: string | undefined;
  resources?: import('../resources/resource-manager.ts').ResourceManager | undefined;
  clock?: import('../core/clock.ts').Clock | undefined;
  inspect?: InspectObserver | undefined;
  onApproval?: ApprovalHandler | undefined;
  pii?: import('../pii/pii-options.ts').PiiOptions | undefined;
  audit?: import('../audit/audit-log.ts').AuditLog | undefined;
  parent?: RunOptions['parent'];
}

/**
 * One turn on a private session that closes when the turn ends: `run()` and `stream()` of an agent with handoffs.
 * Throws a ConfigError for bad input, like `run` rejects.
 */
export function runInSession<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: SessionRunOptions,
  placement?: NestedPlacement,
): {
  sessionId: string;
  result: Promise<RunResult<TOutput>>;
  events: AsyncIterable<RunEvent>;
  /** Stops the private session: the turn ends `aborted`. */
  stop: (reason: string) => Promise<void>;
} {
  const caller = placement?.caller ?? callerOf(options.parent);
  const onApproval = options.onApproval ?? caller?.onApproval;
  const asker = toolAskingPeople(agent as Agent<unknown>);
  if (asker !== null && onApproval === undefined)
    throw new ConfigError(
      `Tool ${asker} waits for a person's decision: pass onApproval to run() or stream(), or run the agent in a session (createAgentSystem().spawn()) and decide with session.approve() / reject() / answer().`,
    );
  const environment = defaultEnvironment(options.clock ?? caller?.clock ?? systemClock);
  // Without a handler nobody can decide: a permission policy's `ask` then denies instead of waiting forever.
  if (onApproval === undefined) environment.peopleCanDecide = false;
  else environment.onApproval = onApproval;
  // A nested run whose events its caller forwards is audited there, once.
  const audit = options.audit ?? (placement ? undefined : caller?.audit);
  if (audit) {
    // Made in a local first: V8 allocates a function literal stored straight into a property in the old generation,
    // where it would keep this run's scope alive until a full collection.
    const observe: typeof environment.onEvent = (event) => audit.observe(event);
    environment.onEvent = observe;
    environment.audit = audit;
  }
  const inspect = options.inspect ?? caller?.inspect;
  if (inspect) environment.inspect = inspect;
  if (options.pii) environment.pii = resolvePii(options.pii, 'run()');
  if (placement) environment.placement = placement;
  const sessionOptions: SessionOptions = {};
  if (options.sessionId !== undefined) sessionOptions.sessionId = options.sessionId;
  if (options.history !== undefined) sessionOptions.history = options.history;
  if (options.context !== undefined) sessionOptions.context = options.context;
  if (options.signal !== undefined) sessionOptions.signal = options.signal;
  if (options.budget !== undefined) sessionOptions.budget = options.budget;
  if (options.tenant !== undefined) sessionOptions.tenant = options.tenant;
  const resources = sharedManagerOf(options, caller);
  if (resources !== undefined) environment.resources = resources;
  const parentScope = parentScopeOf(options, caller);
  if (parentScope !== undefined) sessionOptions.parentScope = parentScope;
  const session = startSession(agent, input, sessionOptions, environment);
  const events = session.events();
  if (onApproval) decideWith(session, onApproval);
  const result = session.result.then(async (value) => {
    await session.stop();
    return value;
  });
  return { sessionId: session.sessionId, result, events, stop: (reason) => session.stop(reason) };
}

/** Answers every approval request of the session with `handler`'s decision. */
function decideWith(session: Session, handler: ApprovalHandler): void {
  void (async () => {
    for await (const event of session.events({ after: -1 })) {
      if (event.type !== 'approval_requested') continue;
      const request = event.data;
      // A request forwarded from a session an agent used as a tool runs in is decided there.
      const own = (pending: { callId: string; route: string }) =>
        pending.callId === request.callId && pending.route === request.route;
      if (!session.pendingApprovals().some(own)) continue;
      let decision: ApprovalDecision;
      try {
        decision = await handler(request);
      } catch (error) {
        decision = {
          type: 'reject',
          reason: `the approval handler failed: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      const apply =
        decision?.type === 'approve'
          ? session.approve(request.callId)
          : decision?.type === 'answer'
            ? session.answer(request.callId, decision.text)
            : session.reject(
                request.callId,
                decision?.type === 'reject' &&
                  typeof decision.reason === 'string' &&
                  decision.reason.trim() !== ''
                  ? decision.reason
                  : 'the approval handler gave no decision',
              );
      // A decision that does not fit the request (an answer to an approval, an approval of a question) must not
      // leave the run waiting: the call is rejected, saying why. A session that ended has nothing left to decide.
      await apply.catch((error: unknown) =>
        session
          .reject(
            request.callId,
            `the approval handler's decision does not fit this call: ${error instanceof Error ? error.message : String(error)}`,
          )
          .catch(() => undefined),
      );
    }
  })();
}
