import type { Agent } from '../agent/define-agent.ts';
import { TroupeError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { ApprovalError } from '../sessions/approval-error.ts';
import type { DecisionReceipt } from './approvals.ts';
import type { SessionStatusView, StoredApproval } from './state.ts';

/** A request to the Restate ingress failed: `status` is the HTTP status (404: no such call waits, 400: bad input). */
export class RestateRequestError extends TroupeError {
  readonly status: number;
  constructor(status: number, message: string) {
    super('restate_request_failed', message);
    this.status = status;
  }
}

export interface RestateClientOptions {
  /** The Restate server's ingress, e.g. http://127.0.0.1:8080. */
  ingress: string;
  /** Headers sent with every request (e.g. an API key your ingress proxy checks). */
  headers?: Record<string, string>;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface SendOptions {
  /** Restate deduplicates requests with the same key: a retried send attaches to the first one's turn. */
  idempotencyKey?: string;
}

/** One session (an object key) of an agent served with restateAgents, through the ingress. */
export interface RestateSession {
  readonly object: string;
  readonly sessionId: string;
  /** Runs a turn and resolves with its result (waits while the turn waits for people). */
  send(input: RunInput, options?: SendOptions): Promise<RunResult<unknown>>;
  /** Starts a turn without waiting for it; `result(invocationId)` waits for it. */
  start(input: RunInput, options?: SendOptions): Promise<{ invocationId: string }>;
  history(): Promise<Message[]>;
  status(): Promise<SessionStatusView>;
  events(): Promise<RunEvent[]>;
  /**
   * Every call of the session's turns that waits or waited for people, in the order asked, each with its turn
   * number; a request whose turn ended without a decision is `withdrawn`.
   */
  approvals(): Promise<StoredApproval[]>;
  /** The calls that wait for a decision now. */
  pendingApprovals(): Promise<StoredApproval[]>;
  /**
   * Approves a waiting call. Exactly one decision applies to a call: one for a call that does not wait for it (an
   * unknown id, a call already decided, a question) rejects with an ApprovalError that says why.
   */
  approve(callId: string): Promise<DecisionReceipt>;
  /** Rejects a waiting call (ApprovalError as for approve). */
  reject(callId: string, reason: string): Promise<DecisionReceipt>;
  /** Answers a waiting question (ApprovalError as for approve). */
  answer(callId: string, text: string): Promise<DecisionReceipt>;
  /** Starts the session from a conversation kept elsewhere (see the Restate guide, docs/restate.md: moving from an embedded store). */
  importConversation(transcript: readonly Message[], agent?: string): Promise<SessionStatusView>;
}

export interface RestateAgentsClient {
  /** A session of the agent's object (by default named after the agent). */
  session(agent: Agent<unknown> | string, id: string): RestateSession;
  /** Waits for a turn started with `start` and resolves with its result. */
  result(invocationId: string): Promise<RunResult<unknown>>;
}

/** A small client for the Restate ingress (HTTP): sends turns and decides approvals from any process. */
export function restateClient(options: RestateClientOptions): RestateAgentsClient {
  const base = options.ingress.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const call = async <T>(path: string, body: unknown, extra: Record<string, string> = {}): Promise<T> => {
    const response = await doFetch(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', ...options.headers, ...extra },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) {
      const refusal = approvalRefusal(response.status, text);
      if (refusal) throw refusal;
      throw new RestateRequestError(response.status, failureMessage(response.status, text));
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  return {
    session(agent, id) {
      const object = typeof agent === 'string' ? agent : agent.name;
      const at = `/${encodeURIComponent(object)}/${encodeURIComponent(id)}`;
      const keyed = (sendOptions?: SendOptions): Record<string, string> =>
        sendOptions?.idempotencyKey === undefined ? {} : { 'idempotency-key': sendOptions.idempotencyKey };
      return {
        object,
        sessionId: id,
        send: (input, sendOptions) => call(`${at}/send`, input, keyed(sendOptions)),
        start: (input, sendOptions) => call(`${at}/send/send`, input, keyed(sendOptions)),
        history: () => call(`${at}/history`, null),
        status: () => call(`${at}/status`, null),
        events: () => call(`${at}/events`, null),
        approvals: () => call(`${at}/approvals`, null),
        pendingApprovals: async () =>
          (await call<StoredApproval[]>(`${at}/approvals`, null)).filter(
            (record) => record.status === 'pending',
          ),
        approve: (callId) => call(`${at}/approve`, { callId }),
        reject: (callId, reason) => call(`${at}/reject`, { callId, reason }),
        answer: (callId, text) => call(`${at}/answer`, { callId, text }),
        importConversation: (transcript, agentName) =>
          call(
            `${at}/importConversation`,
            agentName === undefined ? { transcript } : { transcript, agent: agentName },
          ),
      };
    },
    result: (invocationId) =>
      call(`/restate/invocation/${encodeURIComponent(invocationId)}/attach`, undefined),
  };
}

const approvalRefusalPattern = /^Session "(.*)": cannot decide on call "(.*)": (.*)\.$/s;

/** The ApprovalError a decision handler refused a decision with (its message comes back in the body), if it is one. */
function approvalRefusal(status: number, body: string): ApprovalError | undefined {
  if (status !== 400 && status !== 404 && status !== 409) return undefined;
  let message: unknown;
  try {
    message = (JSON.parse(body) as { message?: unknown }).message;
  } catch {
    return undefined;
  }
  if (typeof message !== 'string') return undefined;
  const match = approvalRefusalPattern.exec(message);
  if (!match) return undefined;
  const [, sessionId = '', callId = '', why = ''] = match;
  return new ApprovalError(sessionId, callId, why);
}

function failureMessage(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === 'string') return `Restate answered ${status}: ${parsed.message}`;
  } catch {
    // Not JSON: show the body as it is.
  }
  return `Restate answered ${status}${body === '' ? '' : `: ${body}`}`;
}
