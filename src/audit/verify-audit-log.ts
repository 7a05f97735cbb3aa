import { type AuditHead, genesisHash, hashOfRecord } from './audit-record.ts';

/** What verifyAuditLog found: an intact chain of `count` records, or where it breaks and why. */
export type AuditVerification = { ok: true; count: number } | { ok: false; at: number; reason: string };

export interface VerifyAuditLogOptions {
  /**
   * The last record the log is known to hold (kept elsewhere, e.g. the seq and hash reported by your monitoring):
   * without it, records cut off the end of a log cannot be told from a log that ended there.
   */
  head?: AuditHead | undefined;
}

const recordKeys = ['seq', 'time', 'type', 'sessionId', 'agent', 'route', 'data', 'prevHash', 'hash'];

/**
 * Checks an audit log's hash chain: records (an array, or the path of a JSONL file) numbered from 1 without gaps,
 * each naming the previous record's hash and carrying its own. An edited field, a deleted, inserted or reordered
 * record, or a line cut short is reported with the seq where the chain breaks (`at`).
 */
export function verifyAuditLog(
  source: readonly unknown[] | string,
  options: VerifyAuditLogOptions = {},
): AuditVerification {
  let entries: readonly unknown[];
  if (typeof source === 'string') {
    const lines = process.getBuiltinModule('node:fs').readFileSync(source, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    entries = lines.map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return malformed;
      }
    });
  } else entries = source;
  let prevHash = genesisHash;
  let expected = 1;
  for (const entry of entries) {
    const fail = (reason: string): AuditVerification => ({ ok: false, at: expected, reason });
    if (entry === malformed) return fail(`record ${expected} is not valid JSON (a line cut short or edited)`);
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return fail(`record ${expected} is not an object`);
    const record = entry as Record<string, unknown>;
    const missing = recordKeys.find((key) => !Object.hasOwn(record, key));
    if (missing !== undefined) return fail(`record ${expected} has no ${missing}`);
    if (record.seq !== expected)
      return fail(
        `expected record ${expected}, found ${JSON.stringify(record.seq)} (a record was deleted, inserted or moved)`,
      );
    if (record.prevHash !== prevHash)
      return fail(`record ${expected} does not follow the one before it (its prevHash differs)`);
    if (record.hash !== hashOfRecord(record as never))
      return fail(`record ${expected} was modified (its hash does not match its content)`);
    prevHash = record.hash as string;
    expected++;
  }
  const count = expected - 1;
  const head = options.head;
  if (head && (head.seq !== count || head.hash !== prevHash))
    return {
      ok: false,
      at: Math.min(count + 1, head.seq),
      reason:
        head.seq > count
          ? `the log ends at record ${count}, but record ${head.seq} was written (records were cut off the end)`
          : `the log's last record is not the known head ${head.seq}`,
    };
  return { ok: true, count };
}

const malformed = Symbol('malformed');
