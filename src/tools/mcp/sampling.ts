import type { CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/client';
import type { ApprovalRequest } from '../../core/approvals.ts';
import { ConfigError } from '../../core/errors.ts';
import { canonicalJson, hashText, type JsonValue } from '../../core/json.ts';
import type { ContentPart, Message } from '../../core/messages.ts';
import { isModelProvider, type ModelProvider, type ModelRequest } from '../../core/model.ts';
import { checkOptionObject, describeValue, isPlainObject } from '../../core/options.ts';
import type { Usage } from '../../core/usage.ts';
import { hasCounts, type PiiCounts } from '../../pii/pii-masker.ts';
import { maskMessages, piiOf, revealResponse } from '../../pii/pii-run.ts';
import { denialError } from '../../resources/denial-error.ts';
import { type ModelReservation, reserveModelCall } from '../../resources/model-reservation.ts';
import type { DurableRun } from '../../run/durable-run.ts';
import { checkGuardrails } from '../../run/guardrail-checks.ts';
import { guardrailPlace } from '../../run/guardrail-stage.ts';
import { breakerReporter, journaledModelEffect } from '../../run/model-gate.ts';
import { callerOf, emitFrom, type RunRuntime, reportSpend } from '../../run/run-runtime.ts';
import type { ToolContext } from '../tool.ts';
import { askerOf } from './ask-person.ts';
import { McpRequestRefusal } from './request-refusal.ts';

/**
 * `mcpServer({ sampling })`: the server may ask for completions (`sampling/createMessage`) while one of its tools
 * runs. `true` answers with the model of the agent that called the tool; an object may name another model, cap the
 * output and ask a person first.
 */
export interface McpSamplingOptions {
  /** The model that answers. Default: the calling agent's model. */
  model?: ModelProvider | undefined;
  /** The most output tokens one request may have; a server asking for more gets this many. Default: what it asks. */
  maxTokens?: number | undefined;
  /**
   * Each request waits for a person's decision first: a pending approval of the calling session (`tool`
   * `<server>/sampling`, `args` the messages and the limit), decided with `approve()` / `reject()`, or run()'s
   * `onApproval`. A run nobody can decide in refuses the request.
   */
  needsApproval?: boolean | undefined;
}

/** The sampling settings of a server, checked. */
export interface SamplingSettings {
  model: ModelProvider | undefined;
  maxTokens: number | undefined;
  needsApproval: boolean;
}

type SamplingParams = CreateMessageRequest['params'];
type SamplingContent = SamplingParams['messages'][number]['content'];

/** Checks `sampling` as `mcpServer()` takes it; undefined when sampling is off. */
export function checkSamplingOptions(value: unknown, where: string): SamplingSettings | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { model: undefined, maxTokens: undefined, needsApproval: false };
  if (!isPlainObject(value))
    throw new ConfigError(`${where}: sampling must be true or an object, got ${describeValue(value)}.`);
  checkOptionObject(value, ['model', 'maxTokens', 'needsApproval'], `${where}: sampling`);
  const { model, maxTokens, needsApproval } = value as McpSamplingOptions;
  if (model !== undefined && !isModelProvider(model))
    throw new ConfigError(
      `${where}: sampling.model must be a model (with generate()), got ${describeValue(model)}.`,
    );
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens < 1))
    throw new ConfigError(
      `${where}: sampling.maxTokens must be an integer >= 1, got ${describeValue(maxTokens)}.`,
    );
  if (needsApproval !== undefined && typeof needsApproval !== 'boolean')
    throw new ConfigError(`${where}: sampling.needsApproval must be a boolean.`);
  return { model, maxTokens, needsApproval: needsApproval ?? false };
}

/**
 * Serves one `sampling/createMessage` of `server` with the model of the run that made the tool call `context`
 * (or the one the settings name), as a model call of that run: reserved on its budgets before it is made (a spent
 * budget refuses the request), settled with its usage, masked like the run's own calls, reported as an
 * `mcp_sampling` event. Rejects with McpRequestRefusal when the request is not served.
 */
export async function serveSampling(
  server: string,
  settings: SamplingSettings,
  params: SamplingParams,
  context: ToolContext,
  sequence: number,
  signal: AbortSignal,
): Promise<CreateMessageResult> {
  const runtime = callerOf(context);
  if (runtime === undefined)
    throw new McpRequestRefusal(`sampling is served only during a tool call made by a Troupe run.`);
  const model = settings.model ?? runtime.agent.model;
  const refuse = (reason: string): never => {
    emitFrom(runtime, 'mcp_sampling', {
      server,
      callId: context.callId,
      model: model.model,
      outcome: 'refused',
      usage: null,
      reason,
    });
    throw new McpRequestRefusal(`sampling refused: ${reason}`);
  };
  if (Array.isArray(params.tools) && params.tools.length > 0)
    refuse('tools in a sampling request are not offered by this client.');
  let messages: Message[];
  try {
    messages = toMessages(params);
  } catch (error) {
    return refuse((error as Error).message);
  }
  const maxTokens =
    settings.maxTokens === undefined ? params.maxTokens : Math.min(params.maxTokens, settings.maxTokens);
  if (settings.needsApproval) {
    const decision = await askApproval(runtime, server, context, messages, maxTokens, sequence, signal);
    if (decision !== undefined) refuse(decision);
  }
  if (signal.aborted) refuse('the request was cancelled.');
  // A durable run records the outcome: a replay answers the server without asking the model (or its guardrails)
  // again. Restate journals it with the turn's other effects; a durable session keeps it in its own journal.
  const key = `sampling/${context.callId}/${sequence}`;
  const ask = () => sample(runtime, server, model, params, messages, maxTokens, context, signal);
  const durable = runtime.runEffect === undefined ? runtime.durable : undefined;
  const outcome = durable
    ? await recordedSampling(
        runtime,
        durable,
        key,
        requestFingerprint(model, params, messages, maxTokens),
        ask,
        context,
      )
    : await journaledModelEffect(runtime, key, ask);
  if ('refused' in outcome) refuse(outcome.refused);
  if ('answered' in outcome) return outcome.answered;
  return refuse('the request was not answered.');
}

/**
 * What one sampling request came to, as plain JSON: the answer for the server with the model call's usage, or why
 * it was refused.
 */
type SamplingOutcome = { answered: CreateMessageResult; usage?: Usage } | { refused: string };

/** An answered sampling request as a durable session records it: the request it answered, by fingerprint. */
interface RecordedSampling {
  request: string;
  outcome: { answered: CreateMessageResult; usage?: Usage };
}

/**
 * A sampling request of a tool call in a durable session is answered by the model once. The answer is committed
 * before the server gets it; when the call is sent again after a restart and its server asks the same request at the
 * same place in the call, the recorded answer is given without a model call. Another request there is asked of the
 * model anew. Either way the recorded call's spend is counted in the run's result once: the process that made it did
 * not live to report it.
 */
async function recordedSampling(
  runtime: RunRuntime,
  durable: DurableRun,
  key: string,
  fingerprint: string,
  ask: () => Promise<SamplingOutcome>,
  context: ToolContext,
): Promise<SamplingOutcome> {
  const recorded = durable.replayToolEffect(key) as RecordedSampling | undefined;
  if (isPlainObject(recorded) && isPlainObject(recorded.outcome)) {
    // Spent either way: the result counts what the model calls of the run cost.
    const { usage } = recorded.outcome;
    if (usage !== undefined) reportSpend(runtime, context.callId, { usage, modelCalls: 1 });
    if (recorded.request === fingerprint) return recorded.outcome;
  }
  const outcome = await ask();
  // A refusal is not recorded: asked again, the request may be served (a budget refilled, a breaker closed).
  if ('answered' in outcome) {
    const record: RecordedSampling = { request: fingerprint, outcome };
    await durable.recordToolEffect(key, record as unknown as JsonValue);
  }
  return outcome;
}

/** What makes two sampling requests the same request: the model asked and everything the server sent it. */
function requestFingerprint(
  model: ModelProvider,
  params: SamplingParams,
  messages: readonly Message[],
  maxTokens: number,
): string {
  return hashText(
    canonicalJson({
      model: `${model.provider}/${model.model}`,
      messages,
      maxTokens,
      temperature: params.temperature ?? null,
      stopSequences: params.stopSequences ?? null,
    }),
  );
}

/**
 * The model call of a sampling request, as the run's own calls are made: the agent's input guardrails check the
 * messages, personal data is masked, the budgets reserve the call, the model (with its retries and breaker, whose
 * changes are `breaker` events) answers, and the spend is settled and reported in the `mcp_sampling` event.
 */
async function sample(
  runtime: RunRuntime,
  server: string,
  model: ModelProvider,
  params: SamplingParams,
  sampled: Message[],
  maxTokens: number,
  context: ToolContext,
  signal: AbortSignal,
): Promise<SamplingOutcome> {
  const guardrails = runtime.agent.guardrails;
  const checks = guardrails ? [...guardrails.input, ...guardrails.parallelInput] : [];
  if (checks.length > 0) {
    const text = sampled
      .map((message) => (typeof message.content === 'string' ? message.content : textOf(message.content)))
      .join('\n');
    const place = { ...guardrailPlace(runtime, 'input'), tool: `${server}/sampling`, callId: context.callId };
    const block = await checkGuardrails(checks, text, text, place, signal);
    if (block)
      return { refused: `guardrail "${block.name}" blocked it${block.message ? `: ${block.message}` : ''}.` };
  }
  if (signal.aborted) return { refused: 'the request was cancelled.' };
  let messages = sampled;
  const pii = piiOf(runtime.bus);
  const maskForModel = pii?.options.model ? pii : undefined;
  if (maskForModel) {
    const counts: PiiCounts = {};
    messages = maskMessages(maskForModel, messages, counts);
    if (hasCounts(counts) && runtime.bus.listening)
      emitFrom(runtime, 'redaction', { target: 'model', counts });
  }
  let request: ModelRequest = {
    messages,
    tools: [],
    settings: {
      maxOutputTokens: maxTokens,
      ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
      ...(params.stopSequences !== undefined ? { stopSequences: [...params.stopSequences] } : {}),
    },
    signal,
    onBreaker: breakerReporter(runtime, signal),
  };
  let reservation: Extract<ModelReservation, { granted: true }> | undefined;
  const resources = runtime.resources;
  if (resources) {
    const scope = runtime.resourceScope?.() ?? runtime.bus.sessionId;
    const outcome = await reserveModelCall(resources, scope, request, model, signal);
    if (!outcome.granted) {
      const denial = outcome.denial;
      return {
        refused: denial.reason === 'budget_exhausted' ? denial.message : denialError(denial).message,
      };
    }
    reservation = outcome;
    request = outcome.request;
  }
  try {
    const answer = await model.generate(request);
    reservation?.settle(answer.usage);
    // The call counts in the run's result too, with the tool call that led to it.
    reportSpend(runtime, context.callId, { usage: answer.usage, modelCalls: 1 });
    const response = maskForModel ? revealResponse(maskForModel, answer) : answer;
    const text = response.text === '' && response.refusal !== undefined ? response.refusal : response.text;
    const stopReason = response.stopReason;
    emitFrom(runtime, 'mcp_sampling', {
      server,
      callId: context.callId,
      model: model.model,
      outcome: 'answered',
      usage: answer.usage,
    });
    return {
      usage: answer.usage,
      answered: {
        role: 'assistant',
        content: { type: 'text', text },
        model: model.model,
        stopReason:
          stopReason === 'max_tokens'
            ? 'maxTokens'
            : stopReason === 'stop_sequence'
              ? 'stopSequence'
              : 'endTurn',
      },
    };
  } catch (error) {
    reservation?.fail(error);
    return { refused: `the model call failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** Asks a person (the session's, else run()'s onApproval); resolves with the reason of a refusal, or undefined. */
async function askApproval(
  runtime: RunRuntime,
  server: string,
  context: ToolContext,
  messages: readonly Message[],
  maxTokens: number,
  sequence: number,
  signal: AbortSignal,
): Promise<string | undefined> {
  const ask = askerOf(runtime);
  if (ask === undefined)
    return `it needs a person's approval and nobody can decide on it in this run: pass onApproval to run() or stream(), or run the agent in a session.`;
  const request: ApprovalRequest = {
    sessionId: context.sessionId,
    callId: `${context.callId}/sampling-${sequence}`,
    agent: context.agent,
    route: context.route,
    tool: `${server}/sampling`,
    args: {
      messages: messages.map((message) => ({
        role: message.role,
        content: typeof message.content === 'string' ? message.content : textOf(message.content),
      })),
      maxTokens,
    },
    kind: 'approval',
    requestedAt: runtime.clock.now(),
  };
  try {
    const decision = await ask(request, signal, (given) =>
      given.type === 'answer'
        ? 'it waits for an approval, not an answer: use approve() or reject()'
        : undefined,
    );
    if (decision.type === 'approve') return undefined;
    return decision.type === 'reject'
      ? `a person rejected it: ${decision.reason}`
      : 'a person did not approve it.';
  } catch (error) {
    if (signal.aborted) return 'the request was cancelled.';
    return `the approval failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function textOf(parts: readonly ContentPart[]): string {
  return parts.map((part) => (part.type === 'text' ? part.text : '[image]')).join('');
}

/** The request's messages as the model gets them: text, and images in the server's user messages. */
function toMessages(params: SamplingParams): Message[] {
  const messages: Message[] = [];
  if (typeof params.systemPrompt === 'string' && params.systemPrompt !== '')
    messages.push({ role: 'system', content: params.systemPrompt });
  for (const message of params.messages) {
    const blocks: readonly SamplingContent[] = Array.isArray(message.content)
      ? (message.content as SamplingContent[])
      : [message.content];
    const parts: ContentPart[] = [];
    for (const block of blocks as readonly {
      type: string;
      text?: unknown;
      data?: unknown;
      mimeType?: unknown;
    }[]) {
      if (block.type === 'text' && typeof block.text === 'string')
        parts.push({ type: 'text', text: block.text });
      else if (
        block.type === 'image' &&
        message.role === 'user' &&
        typeof block.data === 'string' &&
        typeof block.mimeType === 'string'
      )
        parts.push({ type: 'image', data: block.data, mediaType: block.mimeType });
      else
        throw new Error(
          `a ${message.role} message with ${block.type} content is not served (text and user images are).`,
        );
    }
    if (message.role === 'assistant')
      messages.push({
        role: 'assistant',
        content: parts.map((part) => (part.type === 'text' ? part.text : '')).join(''),
      });
    else
      messages.push({
        role: 'user',
        content: parts.every((part) => part.type === 'text')
          ? parts.map((part) => part.text).join('')
          : parts,
      });
  }
  return messages;
}
