/**
 * Troupe's testing kit: scripted, recorded and replayed models, path and termination checks, run assertions; and the
 * internals a test may need to drive directly (the agent statechart, the termination policies its guards apply, the
 * tool registry, the redacting inspector)
 * and reset between tests (circuit breakers, the count of live run runtimes).
 */
export { breakerState, resetBreakers } from '../breakers/circuit-breaker.ts';
export {
  type AgentAnswer,
  type AgentContext,
  type AgentEvent,
  type AgentMachineInput,
  type AgentMachineOutput,
  type AgentRunConfig,
  agentMachine,
  agentOutputOf,
} from '../machines/agent.ts';
export type { PolicyState, TerminationDecision, TerminationPolicy } from '../policies/decision.ts';
export { withDuplicateDetection } from '../policies/duplicate-detection.ts';
export { standardTerminationPolicy } from '../policies/standard-termination.ts';
export { decodeRetriesLeft, stepLimitReached } from '../policies/step-limit.ts';
export { createTerminationPolicy } from '../policies/termination-policy.ts';
export { withToolCallCap } from '../policies/tool-call-cap.ts';
export { toolCallSignature } from '../policies/tool-call-signature.ts';
export { redactingInspector } from '../run/inspect.ts';
export { activeRuntimeCount } from '../run/run-runtime.ts';
export { ToolRegistry } from '../tools/registry.ts';
export {
  type AgentPath,
  type AgentPathsOptions,
  agentPaths,
  expectPath,
  type PathExpectation,
  type PathStep,
} from './agent-paths.ts';
export { agentVariant, type ToolStubs } from './agent-variant.ts';
export {
  arbitraryModelTurns,
  type ModelTurnsOptions,
  type ToolShape,
  type TurnKind,
} from './arbitrary-turns.ts';
export {
  type Cassette,
  type CassetteError,
  type CassetteInteraction,
  CassetteMismatchError,
  type CassetteRequest,
} from './cassette.ts';
export {
  type CassetteMode,
  type CassetteModel,
  type CassetteModelOptions,
  cassetteModel,
  cassetteModeVariable,
} from './cassette-model.ts';
export { cassetteSecretPatterns, type SecretStripOptions } from './cassette-secrets.ts';
export {
  checkTermination,
  TerminationCheckError,
  type TerminationOptions,
  type TerminationReport,
} from './check-termination.ts';
export { expectRun, type RunExpectation } from './expect-run.ts';
export { formatScript } from './format-script.ts';
export { type JsonDifference, jsonDifferences } from './json-diff.ts';
export { type CoverageReport, type PathCoverage, pathCoverage, type ReachableSet } from './path-coverage.ts';
export type { PathGuardrailDecision } from './path-guardrails.ts';
export { type RecordingModel, type RecordingModelOptions, recordingModel } from './recording-model.ts';
export { type ReplayModel, type ReplayModelOptions, replayModel } from './replay-model.ts';
export { type RunInvariantContext, runInvariantViolations } from './run-invariants.ts';
export { arbitraryFromSchema, exampleFromSchema } from './schema-values.ts';
export {
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedTurn,
  type ScriptedTurns,
  scriptedModel,
} from './scripted-model.ts';
export { transitionWords } from './transition-words.ts';
