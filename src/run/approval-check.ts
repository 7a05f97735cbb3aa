import type { ApprovalDecision } from '../core/approvals.ts';
import type { ToolCall } from '../core/messages.ts';
import type { PendingApproval, ToolOutcome } from '../machines/agent.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import type { ApprovalCheckContext, Tool } from '../tools/tool.ts';

/** Outcomes of calls people decided on (rejections, answers to questions), by call id. */
export type DecidedOutcomes = ReadonlyMap<string, ToolOutcome>;

/** A batch's calls sorted by what happens to them now. */
export interface ClassifiedCalls {
  /** Calls to hand to the tool runner (including those it will answer from the journal or refuse). */
  runnable: ToolCall[];
  /** Calls that wait for a person, in call order. */
  pending: PendingApproval[];
  /** Calls answered by a person's decision. */
  decided: DecidedOutcomes;
}

interface CheckPlace extends Omit<ApprovalCheckContext, 'callId'> {
  /** A call's outcome recorded before a restart: it is not asked about again. */
  replayed: (call: ToolCall) => ToolOutcome | undefined;
}

const noOutcomes: DecidedOutcomes = new Map();
const nothingPending: PendingApproval[] = [];

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
  if (decisions.length === 0 && !calls.some((call) => asksPeople(registry.find(call.name)))) {
    return { runnable: calls as ToolCall[], pending: nothingPending, decided: noOutcomes };
  }
  const decisionOf = new Map(decisions.map((entry) => [entry.callId, entry.decision]));
  const verdicts = calls.map((call) => verdictOn(registry, call, decisionOf.get(call.id), place));
  const sort = (resolved: Verdict[]): ClassifiedCalls => {
    const runnable: ToolCall[] = [];
    const pending: PendingApproval[] = [];
    const decided = new Map<string, ToolOutcome>();
    resolved.forEach((verdict, index) => {
      const call = calls[index] as ToolCall;
      if (verdict.type === 'run') runnable.push(call);
      else if (verdict.type === 'wait') pending.push({ callId: call.id, kind: verdict.kind });
      else {
        // The runner answers it from `decided` without running it: the model reads the rejection or the answer.
        decided.set(call.id, verdict.outcome);
        runnable.push(call);
      }
    });
    return { runnable, pending, decided };
  };
  return verdicts.some((verdict) => verdict instanceof Promise)
    ? Promise.all(verdicts).then(sort)
    : sort(verdicts as Verdict[]);
}

type Verdict =
  | { type: 'run' }
  | { type: 'wait'; kind: PendingApproval['kind'] }
  | { type: 'decided'; outcome: ToolOutcome };

const run: Verdict = Object.freeze({ type: 'run' });

function asksPeople(found: Tool | undefined): boolean {
  return found !== undefined && (found.asksHuman === true || found.needsApproval !== false);
}

function verdictOn(
  registry: ToolRegistry,
  call: ToolCall,
  decision: ApprovalDecision | undefined,
  place: CheckPlace,
): Verdict | Promise<Verdict> {
  const found = registry.find(call.name);
  if (decision) return decisionVerdict(call, decision, found?.asksHuman === true);
  if (!found || !asksPeople(found) || place.replayed(call)) return run;
  const parsed = found.input.safeParse(call.args);
  // Invalid arguments are refused by the runner with the schema's message: nobody is asked about them.
  if (!parsed.success) return run;
  if (found.asksHuman) return { type: 'wait', kind: 'question' };
  if (found.needsApproval === true) return { type: 'wait', kind: 'approval' };
  if (typeof found.needsApproval !== 'function') return run;
  const context: ApprovalCheckContext = {
    sessionId: place.sessionId,
    agent: place.agent,
    callId: call.id,
    route: place.route,
    turn: place.turn,
    step: place.step,
  };
  const wait: Verdict = { type: 'wait', kind: 'approval' };
  try {
    const answer = found.needsApproval(parsed.data, context);
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
