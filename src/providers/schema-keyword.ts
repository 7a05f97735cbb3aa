import type { JsonObject } from '../core/json.ts';

/**
 * A tool's JSON Schema without its root `$schema` keyword (the dialect it is written in), for the APIs that refuse
 * keys they do not know in a tool's parameters: Gemini's function declarations and OpenAI's strict mode. Anthropic
 * and OpenAI's non-strict tools are sent the schema as the tool gives it. The schema itself when it has none.
 */
export function withoutSchemaKeyword(schema: JsonObject): JsonObject {
  if (!Object.hasOwn(schema, '$schema')) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}
