export type { PolicyState, TerminationDecision, TerminationPolicy } from './decision.ts';
export { withDuplicateDetection } from './duplicate-detection.ts';
export { standardTerminationPolicy } from './standard-termination.ts';
export { decodeRetriesLeft, stepLimitReached } from './step-limit.ts';
export {
  duplicateToolCallCountIs,
  type StopCondition,
  type StopWhen,
  stepCountIs,
  toolCallCountIs,
} from './stop-condition.ts';
export { createTerminationPolicy } from './termination-policy.ts';
export { withToolCallCap } from './tool-call-cap.ts';
export { toolCallSignature } from './tool-call-signature.ts';
