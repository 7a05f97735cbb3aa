import type { ScriptedTurn } from './scripted-model.ts';

/**
 * A model script as numbered lines, one per turn, for failure messages:
 * `2. calls search({"q":""}), lookup("{bad")  [tool_use]`, `3. fails: ModelError rate_limited: ...`.
 */
export function formatScript(turns: readonly ScriptedTurn[]): string {
  if (turns.length === 0) return '  (no turns: the first model call finds the script exhausted)';
  return turns.map((turn, index) => `  ${index + 1}. ${describeTurn(turn)}`).join('\n');
}

function describeTurn(turn: ScriptedTurn): string {
  const parts: string[] = [];
  if (turn.error !== undefined) {
    const error = turn.error;
    parts.push(
      typeof error === 'string'
        ? `fails: ${error}`
        : `fails: ${error.name}${'kind' in error ? ` ${String(error.kind)}` : ''}: ${error.message}`,
    );
  } else {
    if (turn.toolCalls?.length)
      parts.push(
        `calls ${turn.toolCalls.map((call) => `${call.name}(${JSON.stringify(call.args ?? {})})`).join(', ')}`,
      );
    const text = turn.text ?? turn.deltas?.join('');
    if (text !== undefined && text !== '') parts.push(`says ${JSON.stringify(text)}`);
    if (turn.refusal !== undefined) parts.push(`refuses ${JSON.stringify(turn.refusal)}`);
    if (turn.reasoning?.length) parts.push(`reasons (${turn.reasoning.length} block(s))`);
    if (parts.length === 0) parts.push('answers nothing');
  }
  const notes: string[] = [];
  if (turn.stopReason !== undefined) notes.push(turn.stopReason);
  if (turn.delayMs !== undefined && turn.delayMs > 0) notes.push(`after ${turn.delayMs} ms`);
  return notes.length > 0 ? `${parts.join(', ')}  [${notes.join(', ')}]` : parts.join(', ');
}
