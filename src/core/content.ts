import { describeValue, isPlainObject } from './options.ts';

const details: ReadonlySet<unknown> = new Set(['low', 'high', 'auto']);

/**
 * Why `part` is not a content part a provider can send (a text part with a string, or an image by URL or by base64
 * data with an image media type), or undefined when it is one. Checked before a run starts: a wrong part found
 * later (by a budget estimate, a provider's formatter) would fail in the middle of the run or crash it.
 */
export function contentPartProblem(part: unknown): string | undefined {
  if (!isPlainObject(part)) return `a content part must be an object, got ${describeValue(part)}`;
  if (part.type === 'text')
    return typeof part.text === 'string'
      ? undefined
      : `a text part needs a string "text", got ${describeValue(part.text)}`;
  if (part.type !== 'image')
    return `a content part's type must be "text" or "image", got ${describeValue(part.type)}`;
  if (part.detail !== undefined && !details.has(part.detail))
    return `an image part's detail must be "low", "high" or "auto", got ${describeValue(part.detail)}`;
  if (part.url !== undefined && part.data !== undefined)
    return 'an image part has either a "url" or base64 "data", not both';
  if (part.url !== undefined) {
    if (typeof part.url !== 'string' || !URL.canParse(part.url))
      return `an image part's url must be an absolute URL (http, https or data:), got ${describeValue(part.url)}`;
    if (part.mediaType !== undefined && !isImageMediaType(part.mediaType))
      return `an image part's mediaType must be an image type such as "image/png", got ${describeValue(part.mediaType)}`;
    return undefined;
  }
  if (typeof part.data !== 'string' || part.data === '')
    return 'an image part needs a "url" or non-empty base64 "data"';
  if (!isImageMediaType(part.mediaType))
    return `an image part with base64 data needs a mediaType such as "image/png", got ${describeValue(part.mediaType)}`;
  return undefined;
}

/** Why a run's input is not a string or a non-empty array of content parts, or undefined when it is one. */
export function runInputProblem(input: unknown): string | undefined {
  if (typeof input === 'string') return undefined;
  if (!Array.isArray(input))
    return `input must be a string or an array of content parts, got ${describeValue(input)}`;
  if (input.length === 0) return 'input must not be an empty array of content parts';
  for (const [index, part] of input.entries()) {
    const problem = contentPartProblem(part);
    if (problem !== undefined) return `input[${index}]: ${problem}`;
  }
  return undefined;
}

function isImageMediaType(value: unknown): boolean {
  return typeof value === 'string' && /^image\/[\w.+-]+$/.test(value);
}
