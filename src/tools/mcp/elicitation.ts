import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/client';
import type { ApprovalDecision, ApprovalRequest } from '../../core/approvals.ts';
import type { JsonObject, JsonValue } from '../../core/json.ts';
import { isPlainObject } from '../../core/options.ts';
import { callerOf } from '../../run/run-runtime.ts';
import type { ToolContext } from '../tool.ts';
import { askerOf } from './ask-person.ts';
import { McpRequestRefusal } from './request-refusal.ts';

type ElicitParams = ElicitRequest['params'];
type Content = NonNullable<ElicitResult['content']>;

/**
 * Serves one `elicitation/create` of `server` during the tool call `context`: the question becomes a pending
 * request of the calling session (kind `question`, tool `<server>/elicitation`, its schema in `args`) until a person
 * decides. `answer(callId, json)` accepts with the JSON object given (the schema's defaults fill what it leaves out;
 * an answer that does not fit the schema is refused and the question stays pending); `approve` (from run()'s
 * `onApproval`) accepts with the defaults alone, or a URL flow as done; `reject` declines; a run stopped or timed out
 * while it waits cancels.
 */
export async function serveElicitation(
  server: string,
  params: ElicitParams,
  context: ToolContext,
  sequence: number,
  signal: AbortSignal,
): Promise<ElicitResult> {
  const runtime = callerOf(context);
  if (runtime === undefined)
    throw new McpRequestRefusal('elicitation is served only during a tool call made by a Troupe run.');
  const askPerson = askerOf(runtime);
  if (askPerson === undefined)
    throw new McpRequestRefusal(
      'elicitation refused: nobody can answer in this run: pass onApproval to run() or stream(), or run the agent in a session and answer with session.answer().',
    );
  const form = params.mode !== 'url';
  const schema = form && 'requestedSchema' in params ? (params.requestedSchema as JsonObject) : undefined;
  const url = !form && 'url' in params ? String(params.url) : undefined;
  const args: JsonObject = form
    ? { mode: 'form', requestedSchema: schema ?? {} }
    : { mode: 'url', url: url ?? '' };
  const request: ApprovalRequest = {
    sessionId: context.sessionId,
    callId: `${context.callId}/elicitation-${sequence}`,
    agent: context.agent,
    route: context.route,
    tool: `${server}/elicitation`,
    args,
    kind: 'question',
    question: url === undefined ? params.message : `${params.message}\n${url}`,
    requestedAt: runtime.clock.now(),
  };
  // An approval accepts with the defaults alone: it must fit the form as an empty answer would.
  const check = (decision: ApprovalDecision): string | undefined => {
    if (decision.type === 'reject' || !form) return undefined;
    const parsed = decision.type === 'answer' ? parseAnswer(decision.text) : {};
    if (typeof parsed === 'string') return parsed;
    return contentError(withDefaults(parsed, schema), schema);
  };
  let decision: ApprovalDecision;
  try {
    decision = await askPerson(request, signal, check);
  } catch (error) {
    if (signal.aborted) return { action: 'cancel' };
    throw new McpRequestRefusal(
      `elicitation refused: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
  if (decision.type === 'reject') return { action: 'decline' };
  if (!form) return { action: 'accept' };
  const given = decision.type === 'answer' ? parseAnswer(decision.text) : {};
  const content = withDefaults(typeof given === 'string' ? {} : given, schema);
  return { action: 'accept', content };
}

/** An answer's JSON object (empty text: none given), or why it is not one. */
function parseAnswer(text: string): Record<string, JsonValue> | string {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'the answer must be a JSON object of the requested fields, e.g. {"name": "Ann"}';
  }
  return isPlainObject(parsed) ? (parsed as Record<string, JsonValue>) : 'the answer must be a JSON object';
}

function propertiesOf(schema: JsonObject | undefined): Record<string, JsonObject> {
  const properties = schema?.properties;
  return isPlainObject(properties) ? (properties as Record<string, JsonObject>) : {};
}

/** The content with the schema's defaults for the fields it leaves out. */
function withDefaults(content: Record<string, JsonValue>, schema: JsonObject | undefined): Content {
  const filled: Record<string, JsonValue> = { ...content };
  for (const [name, property] of Object.entries(propertiesOf(schema)))
    if (!Object.hasOwn(filled, name) && isPlainObject(property) && property.default !== undefined)
      filled[name] = property.default;
  return filled as Content;
}

/** Why content does not fit the requested schema (flat, primitive fields), or undefined when it does. */
function contentError(content: Content, schema: JsonObject | undefined): string | undefined {
  const properties = propertiesOf(schema);
  const required = Array.isArray(schema?.required) ? schema.required : [];
  for (const name of required)
    if (typeof name === 'string' && !Object.hasOwn(content, name)) return `the field "${name}" is required`;
  for (const [name, value] of Object.entries(content)) {
    if (!Object.hasOwn(properties, name)) return `the form has no field "${name}"`;
    const property = properties[name] as JsonObject;
    const type = property.type;
    const fits =
      type === 'string'
        ? typeof value === 'string'
        : type === 'number'
          ? typeof value === 'number'
          : type === 'integer'
            ? Number.isInteger(value)
            : type === 'boolean'
              ? typeof value === 'boolean'
              : type === 'array'
                ? Array.isArray(value) && value.every((item) => typeof item === 'string')
                : true;
    if (!fits) return `the field "${name}" must be ${type === 'array' ? 'a list of strings' : `a ${type}`}`;
    if (Array.isArray(property.enum) && typeof value === 'string' && !property.enum.includes(value))
      return `the field "${name}" must be one of ${property.enum.map((item) => JSON.stringify(item)).join(', ')}`;
  }
  return undefined;
}
