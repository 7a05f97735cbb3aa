import { type Message, validateHistory } from 'troupe';
import { expect } from 'vitest';

/** The tool-call ids of a history, in order. */
export function toolCallIds(history: readonly Message[]): string[] {
  return history.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((call) => call.id) : []));
}

/**
 * What is wrong with a history's tool-call ids: one used twice, or a call not answered exactly once. Empty when
 * every id is unique within the whole history and answered by exactly one tool message.
 */
export function toolCallIdProblems(history: readonly Message[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const answers = new Map<string, number>();
  for (const message of history) {
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? []) {
        if (seen.has(call.id)) problems.push(`tool call id ${call.id} is used twice`);
        seen.add(call.id);
      }
    if (message.role === 'tool') answers.set(message.toolCallId, (answers.get(message.toolCallId) ?? 0) + 1);
  }
  for (const id of seen)
    if (answers.get(id) !== 1) problems.push(`tool call ${id} is answered ${answers.get(id) ?? 0} times`);
  for (const id of answers.keys())
    if (!seen.has(id)) problems.push(`tool message answers unknown call ${id}`);
  return problems;
}

/** The history is valid, every tool-call id in it is unique and answered exactly once. */
export function expectUniqueAnsweredIds(history: readonly Message[]): void {
  validateHistory(history);
  expect(toolCallIdProblems(history)).toEqual([]);
}
