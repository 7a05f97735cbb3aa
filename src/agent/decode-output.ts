import { z } from 'zod';
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
    return { ok: false, error: `The JSON does not match the schema:\n${z.prettifyError(checked.error)}` };
  }
  return { ok: true, value: checked.data as JsonValue };
}

function stripCodeFence(text: string): string {
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(text);
  return fenced?.[1]?.trim() ?? text;
}
