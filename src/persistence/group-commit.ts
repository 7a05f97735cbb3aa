import { ConfigError } from '../core/errors.ts';

/** Options of group commit (`createSqliteStore(path, { groupCommit })`). */
export interface GroupCommitOptions {
  /**
   * How long the first commit of a group waits for others to join it, in milliseconds. Default 0: the group holds
   * the commits made in the same turn of the event loop (the sessions that finished a step together), and is
   * written as soon as that turn ends.
   */
  maxDelayMs?: number | undefined;
  /**
   * The most commits one group holds: a group that reaches it is written at once. Default 4096: with thousands of
   * sessions committing at once, fewer and larger groups pay fewer fsyncs and write the pages they share once.
   */
  maxBatch?: number | undefined;
  /**
   * Where the groups are written. `'inline'` (the default): the event loop writes each group itself. `'thread'`: a
   * worker thread of the store, with a connection of its own, runs the statements and the fsync of each group while
   * the event loop goes on with the sessions; `commit`'s promise resolves once the thread has committed the group.
   * The thread takes more than half of the store's CPU time off the event loop, and costs about a sixth more CPU in
   * all.
   */
  writer?: 'thread' | 'inline' | undefined;
}

/** Group commit's options with their defaults filled in. */
export interface GroupCommitSettings {
  maxDelayMs: number;
  maxBatch: number;
}

/**
 * What a store gives group commit: one shared transaction, and a way to write one caller's commit inside it whole
 * or not at all.
 */
export interface GroupTransaction<Entry> {
  /** Opens the shared transaction. `durable` false: every entry is relaxed, the transaction need not reach the disk. */
  begin(durable: boolean): void;
  /**
   * Writes one entry inside the shared transaction. `alone`: in a savepoint of its own, so that an entry that fails
   * leaves nothing of itself and the others go on; otherwise without one (cheaper: an entry that fails then has the
   * whole transaction rolled back). Throws why it could not.
   */
  write(entry: Entry, alone: boolean): void;
  /**
   * Whether an error of `write` is the entry's own fault (its batch broke the store's rules), failing that entry
   * alone; any other error fails the group.
   */
  ownFault(error: unknown): boolean;
  /** Whether the shared transaction is still open (SQLite ends it itself after some I/O errors). */
  open(): boolean;
  /** Commits the shared transaction: one fsync for the group. Throws the typed error of a failure. */
  commit(size: number): void;
  /** Ends the shared transaction, writing nothing of it. */
  rollback(): void;
}

/** A queue of commits written in groups: one transaction, and one fsync, for every commit of a group. */
export interface GroupCommitter<Entry> {
  /** Queues an entry; the promise resolves once it is committed (on disk), or rejects with the error that stopped it. */
  commit(entry: Entry, relaxed: boolean): Promise<void>;
  /** Writes the queued group now (before a delete, or when the store closes). */
  flush(): void;
  /** How many commits wait for the next group. */
  readonly pending: number;
}

interface Waiting<Entry> {
  entry: Entry;
  relaxed: boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** How one commit of a group ended: written, or refused with its error (its own, or the group's). */
export type GroupOutcome = { ok: true } | { ok: false; error: unknown };

/** Checks group commit's options (`true` takes the defaults) and fills in the defaults. */
export function groupCommitSettings(option: true | GroupCommitOptions, where: string): GroupCommitSettings {
  if (option !== true && (typeof option !== 'object' || option === null || Array.isArray(option)))
    throw new ConfigError(
      `${where}: groupCommit must be true, false or { maxDelayMs?, maxBatch?, writer? }; got ${JSON.stringify(option)}.`,
    );
  const given: GroupCommitOptions = option === true ? {} : option;
  for (const key of Object.keys(given))
    if (key !== 'maxDelayMs' && key !== 'maxBatch' && key !== 'writer')
      throw new ConfigError(
        `${where}: groupCommit has no option "${key}" (it takes maxDelayMs, maxBatch and writer).`,
      );
  const maxDelayMs = given.maxDelayMs ?? 0;
  if (typeof maxDelayMs !== 'number' || !Number.isFinite(maxDelayMs) || maxDelayMs < 0)
    throw new ConfigError(
      `${where}: groupCommit.maxDelayMs must be a non-negative number of milliseconds; got ${String(maxDelayMs)}.`,
    );
  const maxBatch = given.maxBatch ?? 4096;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1)
    throw new ConfigError(
      `${where}: groupCommit.maxBatch must be a positive integer; got ${String(maxBatch)}.`,
    );
  groupCommitWriter(option, where);
  return { maxDelayMs, maxBatch };
}

/** Where group commit writes its groups (`writer`, default `'inline'`); refuses another value with a ConfigError. */
export function groupCommitWriter(option: true | GroupCommitOptions, where: string): 'thread' | 'inline' {
  const writer = option === true ? undefined : option.writer;
  if (writer === undefined) return 'inline';
  if (writer !== 'thread' && writer !== 'inline')
    throw new ConfigError(
      `${where}: groupCommit.writer must be 'thread' or 'inline'; got ${JSON.stringify(writer)}.`,
    );
  return writer;
}

/**
 * Group commit: commits arriving in the same turn of the event loop (or within `maxDelayMs` of the first) are written
 * in one transaction, so that they share one fsync. Each caller's promise resolves only once that transaction is
 * committed: a runtime that waits for it before starting the effect keeps the write-ahead rule.
 *
 * - A batch that breaks the store's rules fails its caller alone, and the others are committed: the group is first
 *   written without a savepoint per entry; when an entry is refused, that transaction is rolled back and the group
 *   written again with each entry in a savepoint.
 * - A failure of the group itself (the disk, the file) rolls the whole transaction back and rejects every caller of
 *   the group with the same error: none of them has any of its data written.
 * - Commits are written in the order they were made, so one session's commits keep their order.
 */
export function createGroupCommitter<Entry>(
  transaction: GroupTransaction<Entry>,
  settings: GroupCommitSettings,
): GroupCommitter<Entry> {
  const gathering = gatherGroups<Waiting<Entry>>(settings, settings.maxBatch, (group) => {
    const outcomes = writeGroup(transaction, group);
    for (let index = 0; index < group.length; index++) {
      const waiting = group[index] as Waiting<Entry>;
      const outcome = outcomes[index] as GroupOutcome;
      if (outcome.ok) waiting.resolve();
      else waiting.reject(outcome.error);
    }
  });
  return {
    commit(entry, relaxed) {
      return new Promise<void>((resolve, reject) => {
        gathering.add({ entry, relaxed, resolve, reject });
      });
    },
    flush: () => gathering.flush(),
    get pending() {
      return gathering.pending;
    },
  };
}

/** Commits gathered into groups, each handed on as one (see `gatherGroups`). */
export interface GroupGathering<Item> {
  /** Queues an item: the group is handed on at once when it reaches its limit, else when the turn ends. */
  add(item: Item): void;
  /** Hands on what is queued now (nothing when nothing is). */
  flush(): void;
  /** Removes what is queued and returns it, handing nothing on. */
  take(): Item[];
  /** How many items wait for the next group. */
  readonly pending: number;
}

/**
 * Gathers the items queued in the same turn of the event loop (or within `maxDelayMs` of the first) into one group,
 * handed on when the turn ends, or at once when it reaches `limit` items.
 */
export function gatherGroups<Item>(
  settings: GroupCommitSettings,
  limit: number,
  handOn: (group: Item[]) => void,
): GroupGathering<Item> {
  let queue: Item[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let immediate: ReturnType<typeof setImmediate> | undefined;

  const take = (): Item[] => {
    if (timer !== undefined) clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
    timer = undefined;
    immediate = undefined;
    const group = queue;
    queue = [];
    return group;
  };
  const flush = (): void => {
    const group = take();
    if (group.length > 0) handOn(group);
  };
  return {
    add(item) {
      queue.push(item);
      if (queue.length >= limit) flush();
      else if (timer === undefined && immediate === undefined) {
        if (settings.maxDelayMs > 0) timer = setTimeout(flush, settings.maxDelayMs);
        else immediate = setImmediate(flush);
      }
    },
    flush,
    take,
    get pending() {
      return queue.length;
    },
  };
}

/**
 * Writes one group in one shared transaction and says how each entry ended: written; refused for its own fault (the
 * others go on); or, when the group itself fails (the disk, the file), every entry not already refused fails with
 * that one error and nothing of the group is written.
 *
 * Refusals are rare, and a savepoint per entry costs every entry two statements and a copy of each page it changes:
 * the group is written without them first. Only when an entry is refused is that transaction rolled back and the
 * group written again, each entry in a savepoint, so that the refused one fails alone, with the same error.
 */
export function writeGroup<Entry>(
  transaction: GroupTransaction<Entry>,
  group: readonly { readonly entry: Entry; readonly relaxed: boolean }[],
): GroupOutcome[] {
  return (
    writeGroupOnce(transaction, group, false) ?? (writeGroupOnce(transaction, group, true) as GroupOutcome[])
  );
}

/**
 * One attempt at a group: each entry in a savepoint (`alone`), or none, in which case an entry refused for its own
 * fault rolls the transaction back and the attempt gives up (undefined), unless it was the group's only entry.
 */
function writeGroupOnce<Entry>(
  transaction: GroupTransaction<Entry>,
  group: readonly { readonly entry: Entry; readonly relaxed: boolean }[],
  alone: boolean,
): GroupOutcome[] | undefined {
  // Entries refused for their own fault, by index; every other entry shares one outcome.
  let refused: Map<number, GroupOutcome> | undefined;
  let durable = false;
  for (let index = 0; index < group.length && !durable; index++) durable = !group[index]?.relaxed;
  try {
    transaction.begin(durable);
  } catch (error) {
    return group.map(() => ({ ok: false, error }));
  }
  let written = 0;
  try {
    for (let index = 0; index < group.length; index++) {
      try {
        transaction.write((group[index] as { readonly entry: Entry }).entry, alone);
        written++;
      } catch (error) {
        if (!transaction.ownFault(error) || !transaction.open()) throw error;
        if (!alone) {
          // The batch's own fault, without a savepoint to undo just it: the group is written again with them.
          transaction.rollback();
          return group.length === 1 ? [{ ok: false, error }] : undefined;
        }
        // The batch's own fault: its savepoint is undone, the group goes on.
        refused ??= new Map();
        refused.set(index, { ok: false, error });
      }
    }
    if (written > 0) transaction.commit(written);
    else transaction.rollback();
  } catch (error) {
    transaction.rollback();
    // Every caller of the group, written or not yet: nothing of the group is on disk.
    return outcomesOf(group.length, refused, { ok: false, error });
  }
  return outcomesOf(group.length, refused, committedOutcome);
}

/** The outcome of every entry written with its group. */
const committedOutcome: GroupOutcome = Object.freeze({ ok: true });

/** Each entry's outcome: its own refusal, or the group's. */
function outcomesOf(
  size: number,
  refused: ReadonlyMap<number, GroupOutcome> | undefined,
  rest: GroupOutcome,
): GroupOutcome[] {
  const outcomes = new Array<GroupOutcome>(size).fill(rest);
  if (refused !== undefined) for (const [index, outcome] of refused) outcomes[index] = outcome;
  return outcomes;
}
