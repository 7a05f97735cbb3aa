import type { ModelResponse, ModelStopReason, ToolCall } from 'troupe';

/** A normalized model response for policy tests. */
export function response(
  stopReason: ModelStopReason | undefined,
  options: {
    text?: string;
    calls?: Array<Pick<ToolCall, 'name' | 'args'> & { id?: string }>;
    reasoning?: boolean;
  } = {},
): ModelResponse {
  const result: ModelResponse = {
    text: options.text ?? '',
    toolCalls: (options.calls ?? []).map((call, index) => ({
      id: call.id ?? `c${index}`,
      name: call.name,
      args: call.args,
    })),
    stopReason,
    usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
  };
  if (options.reasoning) result.reasoning = [{ provider: 'test', text: 'hmm', data: { thinking: 'hmm' } }];
  return result;
}

export const noCounts = { toolCallCounts: {}, callSignatures: {} };
