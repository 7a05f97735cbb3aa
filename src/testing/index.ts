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
export { type CoverageReport, type PathCoverage, pathCoverage } from './path-coverage.ts';
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
