import { ConfigError } from '../core/errors.ts';
import { zod } from '../core/zod.ts';
import { type Tool, tool } from './tool.ts';

export interface AskHumanOptions {
  /** The tool name the model sees. Default `ask_human`. */
  name?: string | undefined;
  /** What the model reads about the tool. */
  description?: string | undefined;
}

/**
 * A tool that delegates a question to a person and waits for the answer. When the model calls it, the run pauses
 * in its `awaitingApproval` state (persisted with the session) until someone calls `session.answer(callId, text)`
 * (or `session.reject(callId, reason)`); the answer is the tool's result. The pending question is listed by
 * `session.pendingApprovals()` and `system.approvals()` with `kind: 'question'`.
 */
export function askHuman(options: AskHumanOptions = {}): Tool<{ question: string }, string> {
  const created = tool({
    name: options.name ?? 'ask_human',
    description:
      options.description ??
      'Ask a person a question and wait for their answer. Use it when you need a decision, a fact or a confirmation only a person can give.',
    input: zod().object({ question: zod().string().min(1).describe('The question, in plain words.') }),
    execute: () => {
      // The runtime answers these calls with the person's answer and never runs this function.
      throw new ConfigError('ask_human is answered by a person through session.answer(), not executed.');
    },
  });
  return Object.freeze({ ...created, asksHuman: true as const });
}
