import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { defaultSecretKeys, redact } from '../run/secrets.ts';
import { type AuditRecord, type AuditRecordType, genesisHash, hashOfRecord } from './audit-record.ts';
import type { AuditSink } from './audit-sink.ts';
import { memoryAuditSink } from './memory-audit-sink.ts';

/** What `record()` takes: the kind, where it happened, and what happened. */
export interface AuditEntry {
  type: AuditRecordType;
  sessionId?: string | undefined;
  agent?: string | undefined;
  route?: string | undefined;
  data: unknown;
}

export interface AuditLogOptions {
  /** Where records go: `jsonlAuditSink(path)`, `sqliteAuditSink(store)` or `memoryAuditSink()` (the default). */
  sink?: AuditSink | undefined;
  /** Time source for records; default the system clock. */
  clock?: Clock | undefined;
  /** A write failed; the records stay queued and are written with the next flush. Default: console.error once. */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * An append-only, hash-chained log of security-relevant events: guardrail decisions, permission denials and asks,
 * approvals requested and decided, budget and quota denials, redactions, circuit-breaker changes and configuration
 * errors. Give it to `createAgentSystem({ audit })` or `run(agent, input, { audit })`: it reads their event stream.
 *
 * Records are chained and numbered when they happen, and written in batches after the current task (the run never
 * waits for the disk). `flush()` resolves once everything recorded so far is written; `close()` (and a system's
 * `shutdown()`, which flushes) loses nothing on a clean shutdown. A crash loses at most the records of the batch
 * not yet written: those of the last event-loop turn.
 */
export interface AuditLog {
  readonly kind: 'audit-log';
  /** Records something the event stream does not carry. Returns the record, chained. */
  record(entry: AuditEntry): AuditRecord;
  /** Records an event if it is security-relevant (see auditEntryOf); ignores the rest. */
  observe(event: RunEvent): void;
  /** Resolves once every record so far is written; rejects if the sink fails. */
  flush(): Promise<void>;
  /** Flushes, then closes the sink. Later records are refused. */
  close(): Promise<void>;
}

const secretKeys: ReadonlySet<string> = new Set(defaultSecretKeys);

export function createAuditLog(options: AuditLogOptions = {}): AuditLog {
  const sink = options.sink ?? memoryAuditSink();
  if (typeof sink?.append !== 'function' || typeof sink.head !== 'function')
    throw new ConfigError(
      'createAuditLog(): sink must be an audit sink (jsonlAuditSink(path), memoryAuditSink()...).',
    );
  const clock = options.clock ?? systemClock;
  let reported = false;
  const onError =
    options.onError ??
    ((error: unknown) => {
      if (reported) return;
      reported = true;
      console.error('troupe: the audit log could not be written', error);
    });
  const head = sink.head();
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? genesisHash;
  let queued: AuditRecord[] = [];
  let writing: Promise<void> = Promise.resolve();
  let scheduled = false;
  let closed = false;

  const write = (): Promise<void> => {
    scheduled = false;
    writing = writing.then(async () => {
      if (queued.length === 0) return;
      const batch = queued;
      queued = [];
      try {
        await sink.append(batch);
      } catch (error) {
        // Nothing is dropped: the batch goes back in front of what came meanwhile.
        queued = [...batch, ...queued];
        throw error;
      }
    });
    const done = writing;
    writing = writing.catch(() => undefined);
    return done;
  };

  const log: AuditLog = {
    kind: 'audit-log',
    record(entry) {
      if (closed) throw new ConfigError('The audit log is closed.');
      const content = {
        seq: seq + 1,
        time: clock.now(),
        type: entry.type,
        sessionId: entry.sessionId ?? null,
        agent: entry.agent ?? null,
        route: entry.route ?? null,
        data: toJson(redact(entry.data, secretKeys)),
        prevHash,
      };
      const record: AuditRecord = Object.freeze({ ...content, hash: hashOfRecord(content) });
      seq = record.seq;
      prevHash = record.hash;
      queued.push(record);
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void write().catch(onError));
      }
      return record;
    },
    observe(event) {
      if (closed) return;
      const entry = auditEntryOf(event);
      if (entry) log.record(entry);
    },
    flush: () => write(),
    async close() {
      if (closed) return;
      await write();
      closed = true;
      await sink.close?.();
    },
  };
  return log;
}

/**
 * The audit entry of an event, or undefined for an event that is not security-relevant: guardrail, permission,
 * approval_requested and approval_decided, redaction and breaker events as they are; a run or turn that ended
 * `budget_exhausted` and a call refused by a quota as `budget_denied`.
 */
export function auditEntryOf(event: RunEvent): AuditEntry | undefined {
  const place = { sessionId: event.sessionId, agent: event.agent, route: event.route };
  switch (event.type) {
    case 'guardrail':
    case 'permission':
    case 'approval_requested':
    case 'approval_decided':
    case 'redaction':
    case 'breaker':
      return { type: event.type, ...place, data: event.data };
    case 'run_end':
      return event.data.stopReason === 'budget_exhausted'
        ? {
            type: 'budget_denied',
            ...place,
            data: { stopReason: event.data.stopReason, status: event.data.status, usage: event.data.usage },
          }
        : undefined;
    case 'error':
      return event.data.code === 'quota_exceeded' || event.data.code.startsWith('resources_')
        ? { type: 'budget_denied', ...place, data: event.data }
        : undefined;
    default:
      return undefined;
  }
}

/** Data as JSON (a record is hashed and stored as JSON): what JSON cannot carry is dropped or becomes a string. */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value) ?? 'null') as JsonValue;
  } catch {
    return String(value);
  }
}

/** Records a configuration error raised at a public entry point. */
export function auditConfigError(audit: AuditLog | undefined, where: string, error: unknown): void {
  if (!audit || !(error instanceof ConfigError)) return;
  try {
    audit.record({ type: 'config_error', data: { where, code: error.code, message: error.message } });
  } catch {
    // A closed log: the error itself still reaches the caller.
  }
}
