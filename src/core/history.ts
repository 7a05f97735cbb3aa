import { type HistoryIssue, HistoryValidationError } from './errors.ts';
import type { Message, ToolCall, ToolMessage } from './messages.ts';

const roles = new Set(['system', 'user', 'assistant', 'tool']);

/** Every problem that makes a history unusable, in order (REQUIREMENTS L10, reference 004). Empty when valid. */
export function findHistoryIssues(history: readonly unknown[]): HistoryIssue[] {
  const issues: HistoryIssue[] = [];
  /** Tool calls asked for and not answered yet: id -> index of the assistant message. */
  const open = new Map<string, number>();
  const answered = new Set<string>();
  for (const [index, value] of history.entries()) {
    const issue = (message: string): void => {
      issues.push({ index, message });
    };
    if (typeof value !== 'object' || value === null) {
      issue('a message must be an object');
      continue;
    }
    const message = value as Partial<Message> & Record<string, unknown>;
    if (typeof message.role !== 'string' || !roles.has(message.role)) {
      issue(`role must be one of system, user, assistant, tool; got ${JSON.stringify(message.role)}`);
      continue;
    }
    if (message.role !== 'user' && typeof message.content !== 'string') {
      issue(`${message.role} content must be a string`);
      continue;
    }
    if (message.role === 'user' && typeof message.content !== 'string' && !Array.isArray(message.content)) {
      issue('user content must be a string or an array of content parts');
      continue;
    }
    if (message.role !== 'tool' && open.size > 0) {
      issue(
        `tool call(s) ${[...open.keys()].join(', ')} are not answered before this ${message.role} message`,
      );
      open.clear();
    }
    if (message.role === 'assistant') {
      const calls = (message as { toolCalls?: unknown }).toolCalls;
      if (calls === undefined) continue;
      if (!Array.isArray(calls)) {
        issue('toolCalls must be an array');
        continue;
      }
      for (const call of calls as Partial<ToolCall>[]) {
        if (typeof call?.id !== 'string' || call.id.length === 0)
          issue('every tool call needs a non-empty string id');
        else if (typeof call.name !== 'string' || call.name.length === 0)
          issue(`tool call ${call.id} needs a name`);
        else if (open.has(call.id) || answered.has(call.id)) issue(`tool call id ${call.id} is used twice`);
        else open.set(call.id, index);
      }
      continue;
    }
    if (message.role === 'tool') {
      const id = (message as Partial<ToolMessage>).toolCallId;
      if (typeof id !== 'string' || id.length === 0) {
        issue('a tool message needs a toolCallId');
        continue;
      }
      if (answered.has(id)) {
        issue(`tool call ${id} is answered more than once`);
        continue;
      }
      if (!open.has(id)) {
        issue(`tool message answers ${id}, which no earlier assistant message asked for`);
        continue;
      }
      open.delete(id);
      answered.add(id);
    }
  }
  if (open.size > 0) {
    issues.push({
      index: history.length,
      message: `tool call(s) ${[...open.keys()].join(', ')} are never answered`,
    });
  }
  return issues;
}

/**
 * Throws a HistoryValidationError listing every issue unless: roles are system/user/assistant/tool, each tool
 * message answers an earlier tool call by id, and every tool call is answered exactly once before the next
 * non-tool message.
 */
export function validateHistory(history: readonly unknown[]): asserts history is Message[] {
  if (!Array.isArray(history))
    throw new HistoryValidationError([{ index: 0, message: 'history must be an array' }]);
  const issues = findHistoryIssues(history);
  if (issues.length > 0) throw new HistoryValidationError(issues);
}

/** Tool messages that answer `calls` with an error saying why they did not run, so the history stays valid. */
export function answerUnrunCalls(calls: readonly ToolCall[], reason: string): ToolMessage[] {
  return calls.map((call) => ({
    role: 'tool',
    toolCallId: call.id,
    name: call.name,
    content: `Not run: ${reason}`,
    isError: true,
  }));
}
