import type { ReadOnlyQueryRequest } from './sql-readonly-query.ts';

/** What the sqlQuery tool sends its query process for one query. */
export interface QueryRequestMessage {
  /** Matches the answer to its query; a process answers one query at a time. */
  id: number;
  request: ReadOnlyQueryRequest;
  /** Milliseconds the query may run before the parent kills the process. */
  timeoutMs: number;
  /** Longest answer (JSON text, in characters) sent back; rows are capped first, this is a backstop. */
  maxAnswerChars: number;
}

/** Sent once by the query process when it can take queries (its watchdog thread is running). */
export interface QueryProcessReadyMessage {
  ready: true;
  /**
   * How its memory is bounded: a cap on its address space (every allocation past it fails), or only the watchdog
   * killing it past a resident size.
   */
  memoryBound: 'address-space' | 'resident-memory';
}

/** The query process's answer: a ReadOnlyQueryOutcome as JSON text. */
export interface QueryAnswerMessage {
  id: number;
  answer: string;
}
