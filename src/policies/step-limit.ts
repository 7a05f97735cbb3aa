/**
 * The step limit: checked before each tool-use model call. `steps` counts the model calls already made in the
 * tool-use phase. Pure, so the machine can use it as a guard.
 */
export function stepLimitReached(steps: number, maxSteps: number): boolean {
  return steps >= maxSteps;
}

/** The final-output phase decodes the answer in one first attempt plus `maxDecodeRetries` retries. */
export function decodeRetriesLeft(retryCount: number, maxDecodeRetries: number): boolean {
  return retryCount < maxDecodeRetries;
}
