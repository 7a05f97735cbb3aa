import type { ModelRequest, ModelSettings } from '../core/model.ts';

/** A provider's default settings under the request's own: the request wins, field by field. */
export function withDefaultSettings(
  request: ModelRequest,
  defaults: ModelSettings | undefined,
): ModelRequest {
  if (!defaults) return request;
  return { ...request, settings: { ...defaults, ...request.settings } };
}
