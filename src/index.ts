// The published build loads little at import: the functions re-exported here from the modules listed in
// scripts/build-js.ts (`deferredModules`) load the runtime on their first call. A new export that reaches the
// runtime (machines, sessions, stores) belongs there; test/package/entry-chunks.test.ts fails otherwise.
export { type DecodeResult, decodeOutput } from './agent/decode-output.ts';
export {
  type Agent,
  type AgentOptions,
  defineAgent,
  type HandoffOutputOf,
  type OutputOf,
} from './agent/define-agent.ts';
export type { HandoffInputFilter, HandoffTarget } from './agent/handoff.ts';
export {
  type AuditEntry,
  type AuditLog,
  type AuditLogOptions,
  auditEntryOf,
  createAuditLog,
} from './audit/audit-log.ts';
export type { AuditHead, AuditRecord, AuditRecordType } from './audit/audit-record.ts';
export type { AuditSink } from './audit/audit-sink.ts';
export { type JsonlAuditSinkOptions, jsonlAuditSink } from './audit/jsonl-audit-sink.ts';
export { type MemoryAuditSink, memoryAuditSink } from './audit/memory-audit-sink.ts';
export { sqliteAuditSink } from './audit/sqlite-audit-sink.ts';
export {
  type AuditVerification,
  type VerifyAuditLogOptions,
  verifyAuditLog,
} from './audit/verify-audit-log.ts';
export type { BreakerChange, BreakerOptions } from './breakers/circuit-breaker.ts';
export type {
  ApprovalDecision,
  ApprovalRecord,
  ApprovalRequest,
  ApprovalStatus,
  HumanRequestKind,
} from './core/approvals.ts';
export { type Clock, systemClock } from './core/clock.ts';
export {
  ConfigError,
  DuplicateToolError,
  type ErrorInfo,
  type ErrorName,
  type HistoryIssue,
  HistoryValidationError,
  ModelError,
  type ModelErrorKind,
  RunStopped,
  type RunStoppedInfo,
  ToolInputError,
  ToolTimeoutError,
  TroupeError,
  UnknownToolError,
} from './core/errors.ts';
export {
  type GuardrailDecisionKind,
  type GuardrailStage,
  type Phase,
  type RedactionTarget,
  type RunEvent,
  type RunEventData,
  type RunEventOf,
  type RunEventType,
  toSSE,
} from './core/events.ts';
export type { GuardrailBlock } from './core/guardrail-block.ts';
export { answerUnrunCalls, findHistoryIssues, validateHistory } from './core/history.ts';
export type { JsonObject, JsonValue } from './core/json.ts';
export { type AgentLimits, defaultLimits, type ResolvedLimits } from './core/limits.ts';
export type {
  AssistantMessage,
  ContentPart,
  Message,
  ReasoningBlock,
  Role,
  RunInput,
  SystemMessage,
  ToolCall,
  ToolMessage,
  UserMessage,
} from './core/messages.ts';
export type {
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelSettings,
  ModelStopReason,
  OutputSpec,
  ToolSpec,
} from './core/model.ts';
export { cost, defaultPrices, findPrice, type ModelPrice, type PriceTable } from './core/prices.ts';
export type { RunResult, RunStep, StepToolCall } from './core/result.ts';
export { type RunStatus, type StopReason, statusOf, stopReasons } from './core/stop-reason.ts';
export { addUsage, emptyUsage, type Usage } from './core/usage.ts';
export { interpreterStatus } from './engine/compiled-machine.ts';
export type { Interpreter, InterpreterStatus } from './engine/interpreter-choice.ts';
export { type BlockedPatternsOptions, blockedPatterns } from './guardrails/blocked-patterns.ts';
export {
  type AgentGuardrailOptions,
  type Guardrail,
  type GuardrailCheck,
  type GuardrailCheckInfo,
  type GuardrailOptions,
  guardrail,
} from './guardrails/guardrail.ts';
export { type LlmJudgeOptions, llmJudge } from './guardrails/llm-judge.ts';
export { type TokenEncoding, type TokenLimitOptions, tokenLimit } from './guardrails/token-limit.ts';
export type { GuardrailVerdict } from './guardrails/verdict.ts';
export {
  defaultSupervision,
  type SupervisionOptions,
  type SupervisionPolicy,
  type SupervisionStrategy,
} from './machines/supervision.ts';
export type { GroupCommitOptions } from './persistence/group-commit.ts';
export { createMemoryStore, type MemoryStoreOptions } from './persistence/memory-store.ts';
export {
  createSqliteStore,
  type SqliteGroupCommitStore,
  type SqliteSessionStore,
  type SqliteStoreOptions,
  type SqliteStoreSettings,
} from './persistence/sqlite-store.ts';
export type {
  ApprovalQuery,
  CommitBatch,
  LeaseOptions,
  SessionQuery,
  SessionStore,
  SessionSummary,
  StoredSession,
  StoredSessionState,
  StoredSessionStatus,
  TurnCheckpoint,
} from './persistence/store.ts';
export {
  ForeignStoreError,
  type LeaseHolderInfo,
  SessionFencedError,
  SessionLeasedError,
  StoreClosedError,
  StoreCommitError,
  type StoreCommitRefusal,
  StoreCorruptError,
  StoreIoError,
  StoreLayoutError,
} from './persistence/store-errors.ts';
export type {
  StoredAgentCheckpoint,
  StoredApprovalState,
  StoredDecision,
} from './persistence/stored-format/stored-checkpoint.ts';
export type { StoredSessionRestore } from './persistence/stored-format/stored-restore.ts';
export type { SyncSessionStore } from './persistence/sync-store.ts';
export { type PiiKind, piiKinds } from './pii/detector.ts';
export { type PiiCounts, PiiMasker } from './pii/pii-masker.ts';
export type { PiiOptions } from './pii/pii-options.ts';
export {
  duplicateToolCallCountIs,
  type StopCondition,
  type StopWhen,
  stepCountIs,
  toolCallCountIs,
} from './policies/stop-condition.ts';
export {
  type ByRoleOptions,
  type PermissionDecision,
  type PermissionDecisionKind,
  type PermissionRequest,
  permissions,
  type RoleTable,
  type ToolPermissionPolicy,
} from './policies/tool-permissions.ts';
export type { BudgetLimit, DenialReason, QuotaLimit } from './resources/ledger.ts';
export {
  type BudgetsConfig,
  createResourceManager,
  type Grant,
  type OpenRunOptions,
  type ReservationOutcome,
  type ReservationRequest,
  type ResourceManager,
  type ResourceManagerConfig,
  type ResourceNotice,
  type ResourceUsage,
  type ScopeUsage,
  type Settlement,
} from './resources/resource-manager.ts';
export type { InspectedActorRef, InspectedTransition, InspectObserver } from './run/inspect.ts';
export type { RunItem, RunOptions, RunStream } from './run/run.ts';
export {
  type ContextType,
  contextType,
  type Instructions,
  type OptionsWithContext,
  type RunContextInfo,
} from './run/run-context.ts';
export { redact } from './run/secrets.ts';
export { type AgentTool, type AgentToolOptions, agentTool } from './sessions/agent-tool.ts';
export { ApprovalError } from './sessions/approval-error.ts';
export {
  type MergeStrategy,
  type ParallelGroup,
  type ParallelOptions,
  type ParallelResult,
  type ParallelRunOptions,
  parallel,
} from './sessions/parallel.ts';
export { run, stream } from './sessions/run.ts';
export type {
  Session,
  SessionEventsOptions,
  SessionOptions,
  SessionStatus,
  TurnOptions,
} from './sessions/session.ts';
export { SessionClosedError, SystemClosedError } from './sessions/session-errors.ts';
export type { ApprovalHandler } from './sessions/session-run.ts';
export { SubAgentError } from './sessions/sub-agent-error.ts';
export type { RecoverOptions, RestoreOptions, StoredEventsOptions } from './sessions/system.ts';
export {
  type AgentSystem,
  type AgentSystemOptions,
  createAgentSystem,
  type RecoverResult,
  type ShutdownOptions,
} from './sessions/system.ts';
export { type AskHumanOptions, askHuman } from './tools/ask-human.ts';
export { type Tool, type ToolContext, type ToolOptions, tool } from './tools/tool.ts';
export { ToolAnswerError } from './tools/tool-answer-error.ts';
export { isToolSource, type ToolSource, type ToolSourceScope } from './tools/tool-source.ts';
