import { contentPartProblem } from './content.ts';
import { type HistoryIssue, HistoryValidationError } from './errors.ts';
import { plainJsonProblem } from './json.ts';
import type { Message, ToolCall, ToolMessage } from './messages.ts';
import { describeValue, isPlainObject } from './options.ts';

const roles = new Set(['system', 'user', 'assistant', 'tool']);

/** Every problem that makes a history unusable, in order. Empty when valid. */
export function findHistoryIssues(history: readonly unknown[]): HistoryIssue[] {
  const issues: HistoryIssue[] = [];
  /** Tool calls asked for and not answered yet: id -> index of the assistant message. */
  const open = new Map<string, number>();
  const answered = new Set<string>();
  for (const [index, value] of history.entries()) {
    const issue = (message: string): void => {
      issues.push({ index, message });
    };
    if (!isPlainObject(value)) {
      issue(`a message must be a plain object, got ${describeValue(value)}`);
      continue;
    }
    const message = value as Partial<Message> & Record<string, unknown>;
    if (typeof message.role !== 'string' || !roles.has(message.role)) {
      issue(`role must be one of system, user, assistant, tool; got ${describeValue(message.role)}`);
      continue;
    }
    const problem = shapeProblem(message);
    if (problem !== undefined) {
      issue(problem);
      continue;
    }
    if (message.role !== 'tool' && open.size > 0) {
      issue(
        `tool call(s) ${[...open.keys()].join(', ')} are not answered before this ${message.role} message`,
      );
      open.clear();
    }
    if (message.role === 'assistant') {
      for (const call of (message as { toolCalls?: ToolCall[] }).toolCalls ?? []) {
        if (open.has(call.id) || answered.has(call.id)) issue(`tool call id ${call.id} is used twice`);
        else open.set(call.id, index);
      }
      continue;
    }
    if (message.role === 'tool') {
      const id = (message as ToolMessage).toolCallId;
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
 * What is wrong with the fields of one message whose role is known, or undefined. Every field a provider formatter,
 * the budget estimate or the loop reads is checked here, so a malformed message is refused before a run starts
 * instead of failing (or crashing the process) in the middle of it.
 */
function shapeProblem(message: Record<string, unknown>): string | undefined {
  const { role, content } = message;
  if (role === 'user') {
    if (typeof content === 'string') return undefined;
    if (!Array.isArray(content))
      return `user content must be a string or an array of content parts, got ${describeValue(content)}`;
    if (content.length === 0) return 'user content must not be an empty array';
    for (const [at, part] of content.entries()) {
      const problem = contentPartProblem(part);
      if (problem !== undefined) return `content[${at}]: ${problem}`;
    }
    return undefined;
  }
  if (typeof content !== 'string')
    return `${String(role)} content must be a string, got ${describeValue(content)}`;
  if (role === 'assistant') return assistantProblem(message);
  if (role === 'tool') {
    if (typeof message.toolCallId !== 'string' || message.toolCallId === '')
      return 'a tool message needs a non-empty string toolCallId';
    if (message.name !== undefined && typeof message.name !== 'string')
      return `a tool message's name must be a string, got ${describeValue(message.name)}`;
    if (message.isError !== undefined && typeof message.isError !== 'boolean')
      return `a tool message's isError must be a boolean, got ${describeValue(message.isError)}`;
  }
  return undefined;
}

function assistantProblem(message: Record<string, unknown>): string | undefined {
  if (message.agent !== undefined && typeof message.agent !== 'string')
    return `an assistant message's agent must be a string, got ${describeValue(message.agent)}`;
  const { toolCalls, reasoning } = message;
  if (toolCalls !== undefined) {
    if (!Array.isArray(toolCalls)) return `toolCalls must be an array, got ${describeValue(toolCalls)}`;
    for (const call of toolCalls) {
      if (!isPlainObject(call)) return `every tool call must be an object, got ${describeValue(call)}`;
      if (typeof call.id !== 'string' || call.id === '') return 'every tool call needs a non-empty string id';
      if (typeof call.name !== 'string' || call.name === '') return `tool call ${call.id} needs a name`;
      if (call.args === undefined) return `tool call ${call.id} needs args`;
      const problem = plainJsonProblem(call.args);
      if (problem !== undefined) return `the args of tool call ${call.id} are not plain JSON: ${problem}`;
    }
  }
  if (reasoning !== undefined) {
    if (!Array.isArray(reasoning)) return `reasoning must be an array, got ${describeValue(reasoning)}`;
    for (const block of reasoning) {
      if (!isPlainObject(block) || typeof block.provider !== 'string')
        return 'every reasoning block needs a string provider';
      if (block.text !== undefined && typeof block.text !== 'string')
        return `a reasoning block's text must be a string, got ${describeValue(block.text)}`;
      const problem = block.data === undefined ? 'it is missing' : plainJsonProblem(block.data);
      if (problem !== undefined) return `a reasoning block's data is not plain JSON: ${problem}`;
    }
  }
  return undefined;
}

/**
 * Throws a HistoryValidationError listing every issue unless: every message is well formed (roles
 * system/user/assistant/tool, string content or valid content parts, tool calls with ids, names and plain JSON
 * arguments), each tool message answers an earlier tool call by id, and every tool call is answered exactly once
 * before the next non-tool message.
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
