import type { Content, GenerateContentConfig, GenerateContentParameters, Part } from '@google/genai';
import { ConfigError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import type { AssistantMessage, ContentPart, Message, ReasoningBlock } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';
import { geminiProviderName } from './provider-names.ts';
import { withoutSchemaKeyword } from './schema-keyword.ts';

export { geminiProviderName };

/**
 * What a Gemini reasoning block holds. A thought signature is tied to the part it came on: the function call
 * with `functionCallId`, or (null) the turn's first non-function part. Thought summaries are shown, never sent
 * back: the API does not need them.
 */
export type GeminiReasoningData =
  | { type: 'thought_signature'; signature: string; functionCallId: string | null }
  | { type: 'thought' };

/** `systemInstruction` plus `contents`, from the provider-neutral history. */
export interface GeminiConversation {
  systemInstruction: string | undefined;
  contents: Content[];
}

/**
 * Formats a provider-neutral history for `generateContent`:
 * - system messages are joined into `systemInstruction`;
 * - assistant turns get role `model`: text, then `functionCall` parts (with their ids, so responses match);
 *   each thought signature goes back, unchanged, on the part it came with. Other providers' reasoning is dropped;
 * - tool results become `functionResponse` parts under role `user` (the SDK's own convention: its automatic
 *   function calling sends them that way), consecutive results merged into one content; the response is
 *   `{ output }`, or `{ error }` for a failed tool;
 * - images become `inlineData` (base64 or a data: URL) or `fileData` (http(s)/gs:// URL, with the media type
 *   given or read from the extension; a ConfigError when neither says).
 */
export function toGeminiConversation(history: readonly Message[]): GeminiConversation {
  const systemParts: string[] = [];
  const contents: Content[] = [];
  const toolNames = new Map<string, string>();
  let pendingResponses: Part[] = [];

  const flushResponses = (): void => {
    if (pendingResponses.length === 0) return;
    contents.push({ role: 'user', parts: pendingResponses });
    pendingResponses = [];
  };

  for (const message of history) {
    switch (message.role) {
      case 'system':
        systemParts.push(message.content);
        break;
      case 'tool': {
        const name = message.name ?? toolNames.get(message.toolCallId) ?? 'unknown_tool';
        pendingResponses.push({
          functionResponse: {
            id: message.toolCallId,
            name,
            response: message.isError ? { error: message.content } : { output: message.content },
          },
        });
        break;
      }
      case 'user':
        flushResponses();
        contents.push({
          role: 'user',
          parts:
            typeof message.content === 'string'
              ? [{ text: message.content }]
              : message.content.map(toUserPart),
        });
        break;
      case 'assistant': {
        flushResponses();
        for (const call of message.toolCalls ?? []) toolNames.set(call.id, call.name);
        const parts = modelParts(message);
        if (parts.length > 0) contents.push({ role: 'model', parts });
        break;
      }
    }
  }
  flushResponses();
  return { systemInstruction: systemParts.length > 0 ? systemParts.join('\n\n') : undefined, contents };
}

function modelParts(message: AssistantMessage): Part[] {
  const signatures = new Map<string | null, string>();
  for (const block of message.reasoning ?? []) {
    const data = geminiReasoningData(block);
    if (data?.type === 'thought_signature') signatures.set(data.functionCallId, data.signature);
  }
  const parts: Part[] = [];
  if (message.content.length > 0) parts.push({ text: message.content });
  for (const call of message.toolCalls ?? []) {
    const part: Part = { functionCall: { id: call.id, name: call.name, args: functionArgs(call.args) } };
    const signature = signatures.get(call.id);
    if (signature !== undefined) part.thoughtSignature = signature;
    parts.push(part);
  }
  const looseSignature = signatures.get(null);
  if (looseSignature !== undefined) {
    // A signature that came on a text part goes back on the turn's first non-function part.
    const first = parts[0];
    if (first && !first.functionCall) first.thoughtSignature = looseSignature;
    else parts.unshift({ text: '', thoughtSignature: looseSignature });
  }
  return parts;
}

export function geminiReasoningData(block: ReasoningBlock): GeminiReasoningData | undefined {
  if (block.provider !== geminiProviderName) return undefined;
  const data = block.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  if (data.type === 'thought_signature' && typeof data.signature === 'string') {
    const id = data.functionCallId;
    return {
      type: 'thought_signature',
      signature: data.signature,
      functionCallId: typeof id === 'string' ? id : null,
    };
  }
  if (data.type === 'thought') return { type: 'thought' };
  return undefined;
}

/** `functionCall.args` must be an object; raw (unparsable) arguments are sent back wrapped. */
function functionArgs(args: JsonValue): Record<string, unknown> {
  if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args;
  return { _raw: typeof args === 'string' ? args : JSON.stringify(args) };
}

function toUserPart(part: ContentPart): Part {
  if (part.type === 'text') return { text: part.text };
  if ('data' in part) return inlineImage(part.mediaType, part.data);
  const dataUrl = parseDataUrl(part.url);
  if (dataUrl) return inlineImage(dataUrl.mediaType, dataUrl.data);
  if (!/^(https?|gs):\/\//i.test(part.url)) {
    throw new ConfigError(
      `Gemini takes images as http(s) or gs:// URLs or base64 data; got the URL "${part.url.slice(0, 60)}".`,
    );
  }
  const mimeType = part.mediaType ?? imageMimeTypeFromUrl(part.url);
  if (mimeType === undefined) {
    throw new ConfigError(
      `Gemini needs the media type of an image URL and "${part.url.slice(0, 60)}" does not show one: pass { url, mediaType }.`,
    );
  }
  return { fileData: { fileUri: part.url, mimeType } };
}

function inlineImage(mediaType: string, data: string): Part {
  if (!mediaType.startsWith('image/')) {
    throw new ConfigError(`An image part needs an image/* media type; got "${mediaType}".`);
  }
  if (data.startsWith('data:')) {
    throw new ConfigError(
      "An image part's data must be the bare base64 payload; pass a data: URL as { url } instead.",
    );
  }
  return { inlineData: { mimeType: mediaType, data } };
}

/** `data:<media type>;base64,<payload>` split in two; undefined for any other URL. */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { mediaType: (match[1] ?? '').toLowerCase(), data: match[2] ?? '' };
}

/** `fileData` needs a MIME type: read it from the URL's extension when it has a known one. */
function imageMimeTypeFromUrl(url: string): string | undefined {
  const path = url.split(/[?#]/)[0]?.toLowerCase() ?? '';
  if (path.endsWith('.png')) return 'image/png';
  if (path.endsWith('.jpg') || path.endsWith('.jpeg')) return 'image/jpeg';
  if (path.endsWith('.webp')) return 'image/webp';
  if (path.endsWith('.gif')) return 'image/gif';
  if (path.endsWith('.heic')) return 'image/heic';
  if (path.endsWith('.heif')) return 'image/heif';
  return undefined;
}

/**
 * The whole `generateContentStream` parameters (without the abort signal, which the caller adds). Tools are
 * declared with `parametersJsonSchema` (plain JSON Schema, not the OpenAPI subset of `parameters`); structured
 * output uses `responseMimeType: application/json` with `responseJsonSchema`. `settings.providerOptions` are
 * merged into `config` first (for example `thinkingConfig`), so the fields we own win. Automatic continuation
 * is off: retries are ours (retry.ts), and a silent reconnect would replay deltas.
 */
export function toGeminiRequest(request: ModelRequest, model: string): GenerateContentParameters {
  const { systemInstruction, contents } = toGeminiConversation(request.messages);
  const settings = request.settings;
  const config: GenerateContentConfig = {
    ...(settings.providerOptions as GenerateContentConfig | undefined),
    automaticContinuation: false,
  };
  if (systemInstruction !== undefined) config.systemInstruction = systemInstruction;
  if (request.tools.length > 0) {
    config.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          parametersJsonSchema: withoutSchemaKeyword(tool.parameters),
        })),
      },
    ];
  }
  if (request.output) {
    config.responseMimeType = 'application/json';
    config.responseJsonSchema = request.output.schema;
  }
  if (settings.maxOutputTokens !== undefined) config.maxOutputTokens = settings.maxOutputTokens;
  if (settings.temperature !== undefined) config.temperature = settings.temperature;
  if (settings.topP !== undefined) config.topP = settings.topP;
  if (settings.stopSequences && settings.stopSequences.length > 0)
    config.stopSequences = settings.stopSequences;
  return { model, contents, config };
}
