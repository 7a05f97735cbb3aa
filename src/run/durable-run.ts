import type { ApprovalRequest } from '../core/approvals.ts';
import type { JsonValue } from '../core/json.ts';
import type { AgentContext, AgentEvent, EffectCommand, ToolOutcome } from '../machines/agent.ts';
import type { MaybePromise } from '../persistence/store.ts';

/**
 * Write-ahead persistence of one agent's run inside a session. The run's effects call it so that no model or tool
 * call starts before the state that decided it is committed, and so that a call that finished is recorded before
 * the machine hears of it: after a crash, a suspend or a supervised restart, finished calls are replayed from the
 * journal and only the call that was in flight runs again (with the same idempotency key).
 *
 * Every method either returns once the change is committed, or returns a promise that settles when it is; a thrown
 * error or a rejection means nothing was committed and the effect must not start.
 */
export interface DurableRun {
  /** Commits the state that decided `command` (the agent's context right now). */
  beforeEffect(command: EffectCommand, context: AgentContext): MaybePromise<void>;
  /**
   * Commits now what the run holds back to commit with its next checkpoint (a turn's start, which goes with the
   * agent's first checkpoint), for a step that commits nothing of its own (a guardrail check): nothing starts before
   * the turn it belongs to is committed. Returns once committed, or a promise that settles when it is; a rejection
   * means the step must not start.
   */
  commitPending?(): MaybePromise<void>;
  /** Whether a call already has an approval record (asked before a restart): it is not asked again. */
  isRequested(callId: string): boolean;
  /** Commits the pause and the requests of calls that wait for people. */
  awaitPeople(requests: readonly ApprovalRequest[], context: AgentContext): MaybePromise<void>;
  /** The recorded answer of model call number `call` (from 1) of this run, if it finished before a restart. */
  replayModel(call: number): AgentEvent | undefined;
  /** Records a model call's answer before the machine sees it. */
  recordModel(call: number, event: AgentEvent): MaybePromise<void>;
  /** The recorded outcome of a tool call of `step`, if it finished before a restart. */
  replayTool(step: number, callId: string): ToolOutcome | undefined;
  /**
   * Records a finished tool call's outcome. `last`: no other call of its batch is running, so the agent's next
   * checkpoint follows at once and may carry the outcome in its own commit.
   */
  recordTool(step: number, callId: string, outcome: ToolOutcome, last: boolean): MaybePromise<void>;
  /**
   * The recorded outcome of an effect a running tool call asked for under `key` (an MCP server's sampling request),
   * if it finished before a restart. Such records last until the turn ends.
   */
  replayToolEffect(key: string): JsonValue | undefined;
  /** Records such an outcome, committed when it returns: whoever asked for it may act on it at once. */
  recordToolEffect(key: string, value: JsonValue): MaybePromise<void>;
}
