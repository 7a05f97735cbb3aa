import type { z } from 'zod';
import type { JsonValue } from '../core/json.ts';

export type DecodeResult = { ok: true; value: JsonValue } | { ok: false; error: string };

/**
 * Decodes a final answer against the agent's output schema: the JSON may be wrapped in a Markdown code fence
 * (models do that even when asked not to); the parsed value must satisfy the schema. The error text is
 * written for the model, which gets it back on a retry.
 */
export function decodeOutput(text: string, schema: z.ZodType): DecodeResult {
  const json = stripCodeFence(text.trim());
  if (json === '') return { ok: false, error: 'The reply was empty; a JSON value was expected.' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    return { ok: false, error: `The reply is not valid JSON (${(error as Error).message}).` };
  }
  const checked = schema.safeParse(parsed);
  if (!checked.success) {
    return {
      ok: false,
      error: `The JSON does not match the schema:\n${describeIssues(checked.error.issues)}`,
    };
  }
  return { ok: true, value: checked.data as JsonValue };
}

function stripCodeFence(text: string): string {
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(text);
  return fenced?.[1]?.trim() ?? text;
}

/**
 * The schema's complaints, one per line with where each applies (`✖ message` then `  → at path`), shallowest first:
 * the same text as zod's `prettifyError`, written here so decoding needs only the schema the agent holds.
 */
function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const lines: string[] = [];
  const sorted = [...issues].sort((a, b) => a.path.length - b.path.length);
  for (const issue of sorted) {
    lines.push(`✖ ${issue.message}`);
    if (issue.path.length > 0) lines.push(`  → at ${dotPath(issue.path)}`);
  }
  return lines.join('\n');
}

function dotPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else if (typeof key === 'symbol') text += `[${JSON.stringify(String(key))}]`;
    else if (/[^\w$]/.test(key)) text += `[${JSON.stringify(key)}]`;
    else text += text === '' ? key : `.${key}`;
  }
  return text;
}
