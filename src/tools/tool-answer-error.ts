import { TroupeError } from '../core/errors.ts';

/**
 * Thrown by a tool whose call was carried out and answered with an error (an MCP server's `isError` result, a
 * JSON-RPC error): the model gets the message as an error result at once. Unlike other failures the call is not
 * retried and does not count towards the tool being disabled, since running it again would give the same answer.
 */
export class ToolAnswerError extends TroupeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('tool_answer_error', message, options);
  }
}
