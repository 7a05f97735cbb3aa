import type { CommitBatch } from '../persistence/store.ts';

/**
 * One batch that commits what `first` and then `second` commit: the store applies it as it would apply the two in
 * order, but atomically (both or neither). A later value replaces an earlier one of the same key (the session row,
 * a nested run's route, a journal key, an approval's call id); a `clearTurn` of `second` drops what `first` wrote
 * of the turn; the batch is relaxed only when both are.
 */
export function mergedCommit(first: CommitBatch, second: CommitBatch): CommitBatch {
  const merged: CommitBatch = {};
  const session = second.session ?? first.session;
  if (session !== undefined) merged.session = session;
  const clears = second.clearTurn === true;
  if (clears || first.clearTurn === true) merged.clearTurn = true;
  const runs = lastByKey(clears ? undefined : first.runs, second.runs, (entry) => entry[0]);
  if (runs !== undefined) merged.runs = runs;
  const journal = lastByKey(clears ? undefined : first.journal, second.journal, (entry) => entry[0]);
  if (journal !== undefined) merged.journal = journal;
  const events = [...(first.events ?? []), ...(second.events ?? [])];
  if (events.length > 0) merged.events = events;
  const approvals = lastByKey(first.approvals, second.approvals, (record) => record.callId);
  if (approvals !== undefined) merged.approvals = approvals;
  if (first.relaxed === true && second.relaxed === true) merged.relaxed = true;
  return merged;
}

/** The entries of both lists in order, each key once, at its last value (undefined when both are absent). */
function lastByKey<Entry>(
  first: readonly Entry[] | undefined,
  second: readonly Entry[] | undefined,
  keyOf: (entry: Entry) => string,
): Entry[] | undefined {
  if (first === undefined && second === undefined) return undefined;
  const byKey = new Map<string, Entry>();
  for (const entry of first ?? []) byKey.set(keyOf(entry), entry);
  // A key seen in both keeps its first place, as it would when the two are applied one after the other.
  for (const entry of second ?? []) byKey.set(keyOf(entry), entry);
  return [...byKey.values()];
}
