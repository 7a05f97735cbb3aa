import type { ApprovalDecision } from '../core/approvals.ts';
import type { ToolCall } from '../core/messages.ts';
import type { PendingApproval, ToolOutcome } from '../machines/agent.ts';
import type { NormalizedPermission } from '../policies/tool-permissions.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import type { ApprovalCheckContext, Tool } from '../tools/tool.ts';
import { type ArgumentCheck, checkArguments } from './tool-runner.ts';

/** Outcomes of calls people decided on (rejections, answers to questions), by call id. */
export type DecidedOutcomes = ReadonlyMap<string, ToolOutcome>;

/** A batch's calls sorted by what happens to them now. */
export interface ClassifiedCalls {
  /** Calls to hand to the tool runner (including those it answers from a decision or the journal, or refuses). */
  runnable: ToolCall[];
  /** Calls that wait for a person, in call order. */
  pending: PendingApproval[];
  /** Calls answered by a person's decision, or denied by the permission policy. */
  decided: DecidedOutcomes;
  /** The permission policy's decisions to deny or ask, in call order (for the `permission` events). */
  permissions: PermissionVerdict[];
  /**
   * The argument checks made here, by call id: the runner runs a call with the value checked here (or refuses it
   * with the check's error) and never asks the schema again, so what the policy and people decided on is what runs.
   */
  checked: ReadonlyMap<string, ArgumentCheck>;
}

/** A permission policy's decision on one call that did not simply let it run. */
export interface PermissionVerdict {
  callId: string;
  tool: string;
  decision: 'deny' | 'ask';
  reason?: string;
}

interface CheckPlace extends Omit<ApprovalCheckContext, 'callId' | 'context'> {
  /** The run context, for approval predicates. */
  context?: unknown;
  /** A call's outcome recorded before a restart: it is not asked about again. */
  replayed: (call: ToolCall) => ToolOutcome | undefined;
  /** The agent's permission policy, already bound to the run context; it never throws (see checkPermission). */
  permit?: ((call: ToolCall) => NormalizedPermission | Promise<NormalizedPermission>) | undefined;
}

const noOutcomes: DecidedOutcomes = new Map();
const nothingPending: PendingApproval[] = [];
const noPermissions: PermissionVerdict[] = [];
const noChecks: ReadonlyMap<string, ArgumentCheck> = new Map();

/**
 * Whether a batch of an agent without a permission policy has anything to sort: a decision people made, or a call
 * to a tool that asks people. When it has not, every call runs as it is (see `unclassified`), and the gate need
 * not build the place a classification reads.
 */
export function needsClassifying(
  registry: ToolRegistry,
  calls: readonly ToolCall[],
  decisions: readonly { callId: string; decision: ApprovalDecision }[],
): boolean {
  if (decisions.length > 0) return true;
  // Indexed: asked once per tool step, where `for...of` makes an iterator and a result object per call.
  for (let index = 0; index < calls.length; index++)
    if (asksPeople(registry.find((calls[index] as ToolCall).name))) return true;
  return false;
}

/** A batch with nothing to sort: every call runs, nothing waits or was decided, no argument checked yet. */
export function unclassified(calls: readonly ToolCall[]): ClassifiedCalls {
  return {
    runnable: calls as ToolCall[],
    pending: nothingPending,
    decided: noOutcomes,
    permissions: noPermissions,
    checked: noChecks,
  };
}

/**
 * Sorts a batch: calls people decided on are answered from the decision (an approved call runs), calls to a tool
 * that needs approval (or to `askHuman`) wait, the rest run. Synchronous unless a tool decides with an async
 * predicate, so a batch without approval tools costs nothing extra.
 */
export function classifyCalls(
  registry: ToolRegistry,
  calls: readonly ToolCall[],
  decisions: readonly { callId: string; decision: ApprovalDecision }[],
  place: CheckPlace,
): ClassifiedCalls | Promise<ClassifiedCalls> {
  if (place.permit === undefined && !needsClassifying(registry, calls, decisions)) return unclassified(calls);
  const decisionOf = new Map(decisions.map((entry) => [entry.callId, entry.decision]));
  const checked = new Map<string, ArgumentCheck>();
  const verdicts = calls.map((call) => verdictOn(registry, call, decisionOf.get(call.id), place, checked));
  const sort = (resolved: Verdict[]): ClassifiedCalls => {
    const runnable: ToolCall[] = [];
    const pending: PendingApproval[] = [];
    const decided = new Map<string, ToolOutcome>();
    const permissions: PermissionVerdict[] = [];
    resolved.forEach((verdict, index) => {
      const call = calls[index] as ToolCall;
      if (verdict.permission) permissions.push(verdict.permission);
      if (verdict.type === 'wait') pending.push({ callId: call.id, kind: verdict.kind });
      else {
        // A decided call goes to the runner too, which answers it with the decision without running anything.
        runnable.push(call);
        if (verdict.type === 'decided') decided.set(call.id, verdict.outcome);
      }
    });
    return { runnable, pending, decided, permissions, checked };
  };
  return verdicts.some((verdict) => verdict instanceof Promise)
    ? Promise.all(verdicts).then(sort)
    : sort(verdicts as Verdict[]);
}

type Verdict = (
  | { type: 'run' }
  | { type: 'wait'; kind: PendingApproval['kind'] }
  | { type: 'decided'; outcome: ToolOutcome }
) & { permission?: PermissionVerdict };

const run: Verdict = Object.freeze({ type: 'run' });

function asksPeople(found: Tool | undefined): boolean {
  return found !== undefined && (found.asksHuman === true || found.needsApproval !== false);
}

function verdictOn(
  registry: ToolRegistry,
  call: ToolCall,
  decision: ApprovalDecision | undefined,
  place: CheckPlace,
  checked: Map<string, ArgumentCheck>,
): Verdict | Promise<Verdict> {
  const found = registry.find(call.name);
  if (decision) {
    // An approved call runs with the arguments checked now: the runner does not ask the schema again.
    if (found && decision.type === 'approve') checked.set(call.id, checkArguments(found, call));
    return decisionVerdict(call, decision, found?.asksHuman === true);
  }
  const permit = place.permit;
  if (!found || (!permit && !asksPeople(found)) || place.replayed(call)) return run;
  // The schema is asked once, here: a failed or throwing check is refused by the runner with that error (the tool
  // never runs, nobody is asked about it); a passed one runs with this very value once it is let through.
  const check = checkArguments(found, call);
  checked.set(call.id, check);
  if (!check.ok) return run;
  const args = check.value;
  if (!permit) return peopleVerdict(found, call, args, place);
  const permission = permit(call);
  const then = (verdict: NormalizedPermission): Verdict | Promise<Verdict> => {
    if (verdict.decision === 'allow') return peopleVerdict(found, call, args, place);
    const reported: PermissionVerdict = { callId: call.id, tool: call.name, decision: verdict.decision };
    if (verdict.reason !== undefined) reported.reason = verdict.reason;
    if (verdict.decision === 'ask')
      return { type: 'wait', kind: found.asksHuman ? 'question' : 'approval', permission: reported };
    return { type: 'decided', outcome: deniedOutcome(call, verdict.reason), permission: reported };
  };
  return permission instanceof Promise ? permission.then(then) : then(permission);
}

/** The outcome of a call the permission policy denied: the tool never runs, the model reads why. */
function deniedOutcome(call: ToolCall, reason: string | undefined): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    content: `Error: permission denied: the call to "${call.name}" was not run${reason ? `: ${reason}` : '.'}`,
    isError: true,
    executed: false,
    degraded: false,
    attempts: 0,
  };
}

/** Whether a permitted call waits for a person: a question, a tool that needs approval, or neither. */
function peopleVerdict(
  found: Tool,
  call: ToolCall,
  args: unknown,
  place: CheckPlace,
): Verdict | Promise<Verdict> {
  if (found.asksHuman) return { type: 'wait', kind: 'question' };
  if (found.needsApproval === true) return { type: 'wait', kind: 'approval' };
  if (typeof found.needsApproval !== 'function') return run;
  const context: ApprovalCheckContext = {
    context: place.context,
    sessionId: place.sessionId,
    agent: place.agent,
    callId: call.id,
    route: place.route,
    turn: place.turn,
    step: place.step,
  };
  const wait: Verdict = { type: 'wait', kind: 'approval' };
  try {
    const answer = found.needsApproval(args, context);
    // A predicate that throws or rejects counts as "needs approval": the safe side.
    if (answer instanceof Promise)
      return answer.then(
        (needed) => (needed === false ? run : wait),
        () => wait,
      );
    return answer === false ? run : wait;
  } catch {
    return wait;
  }
}

function decisionVerdict(call: ToolCall, decision: ApprovalDecision, question: boolean): Verdict {
  if (decision.type === 'approve') return run;
  const outcome: ToolOutcome =
    decision.type === 'answer'
      ? {
          callId: call.id,
          name: call.name,
          content: decision.text,
          isError: false,
          executed: true,
          degraded: false,
          attempts: 1,
        }
      : {
          callId: call.id,
          name: call.name,
          content: question
            ? `No answer: the person declined to answer: ${decision.reason}`
            : `Not run: a person rejected this call: ${decision.reason}`,
          isError: true,
          executed: false,
          degraded: false,
          attempts: 0,
        };
  return { type: 'decided', outcome };
}
