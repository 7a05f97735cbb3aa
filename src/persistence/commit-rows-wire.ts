import type { CommitRows, Plain } from './sqlite-store.ts';

/**
 * A group of commits as the writer thread receives them: every commit's values one after the other in one flat list
 * (`appendCommitRows`), read back in the same order (`readCommitRows`). Copying a list of strings and numbers to
 * another thread costs a third of copying the same values as the commit's objects and lists: the copy pays for
 * every object and every key, and the thread then allocates each of them.
 */
export type CommitRowsWire = Plain[];

const relaxedFlag = 1;
const runsSessionFlag = 2;
const clearTurnFlag = 4;
const sessionFlag = 8;

/** Appends one commit's values to `wire`. */
export function appendCommitRows(wire: CommitRowsWire, rows: CommitRows): void {
  const session = rows.session;
  wire.push(
    rows.sessionId,
    (rows.relaxed ? relaxedFlag : 0) |
      (rows.runsSession ? runsSessionFlag : 0) |
      (rows.clearTurn ? clearTurnFlag : 0) |
      (session !== undefined ? sessionFlag : 0),
  );
  if (session !== undefined)
    wire.push(
      session.id,
      session.status,
      session.entry,
      session.agent,
      session.turns,
      session.updatedAt,
      session.doc,
    );
  const messages = rows.messages;
  if (messages === undefined) wire.push(-1);
  else {
    wire.push(messages.docs.length, messages.keep, messages.keepSum);
    for (let index = 0; index < messages.docs.length; index++)
      wire.push(messages.docs[index], messages.sums[index]);
  }
  wire.push(rows.runs.length);
  for (let index = 0; index < rows.runs.length; index++) {
    const entry = rows.runs[index] as CommitRows['runs'][number];
    wire.push(entry[0], entry[1]);
  }
  wire.push(rows.journal.length);
  for (let index = 0; index < rows.journal.length; index++) {
    const entry = rows.journal[index] as CommitRows['journal'][number];
    wire.push(entry[0], entry[1]);
  }
  wire.push(rows.events.length);
  for (let index = 0; index < rows.events.length; index++) {
    const event = rows.events[index] as CommitRows['events'][number];
    wire.push(event.seq, event.time, event.agent, event.type);
  }
  wire.push(rows.eventsDoc, rows.approvals.length);
  for (let index = 0; index < rows.approvals.length; index++) {
    const approval = rows.approvals[index] as CommitRows['approvals'][number];
    wire.push(approval.callId, approval.status, approval.requestedAt, approval.decidedAt, approval.doc);
  }
}

/**
 * Reads the commits of a group back from its wire, as `appendCommitRows` wrote them: `count` commits from the
 * start of `wire`.
 */
export function readCommitRows(wire: CommitRowsWire, count: number): CommitRows[] {
  const group = new Array<CommitRows>(count);
  let at = 0;
  const next = (): Plain => wire[at++];
  const text = (): string => wire[at++] as string;
  const number = (): number => wire[at++] as number;
  for (let commit = 0; commit < count; commit++) {
    const sessionId = text();
    const flags = number();
    const session =
      (flags & sessionFlag) === 0
        ? undefined
        : {
            id: next(),
            status: next(),
            entry: next(),
            agent: next(),
            turns: next(),
            updatedAt: next(),
            doc: text(),
          };
    const messageCount = number();
    let messages: CommitRows['messages'];
    if (messageCount >= 0) {
      const keep = number();
      const keepSum = number();
      const docs = new Array<string>(messageCount);
      const sums = new Array<number>(messageCount);
      for (let index = 0; index < messageCount; index++) {
        docs[index] = text();
        sums[index] = number();
      }
      messages = { keep, keepSum, docs, sums };
    }
    const runs: CommitRows['runs'] = new Array(number());
    for (let index = 0; index < runs.length; index++) runs[index] = [next(), next() as string | null];
    const journal: CommitRows['journal'] = new Array(number());
    for (let index = 0; index < journal.length; index++) journal[index] = [next(), text()];
    const events: CommitRows['events'] = new Array(number());
    for (let index = 0; index < events.length; index++)
      events[index] = { seq: next(), time: next(), agent: next(), type: next() };
    const eventsDoc = text();
    const approvals: CommitRows['approvals'] = new Array(number());
    for (let index = 0; index < approvals.length; index++)
      approvals[index] = {
        callId: next(),
        status: next(),
        requestedAt: next(),
        decidedAt: next(),
        doc: text(),
      };
    group[commit] = {
      sessionId,
      relaxed: (flags & relaxedFlag) !== 0,
      runsSession: (flags & runsSessionFlag) !== 0,
      clearTurn: (flags & clearTurnFlag) !== 0,
      session,
      messages,
      runs,
      journal,
      events,
      eventsDoc,
      approvals,
    };
  }
  return group;
}
