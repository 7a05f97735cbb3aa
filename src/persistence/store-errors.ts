import { TroupeError } from '../core/errors.ts';

/** A stored record cannot be read back: damaged on disk, truncated, or not what Troupe writes. Names the session. */
export class StoreCorruptError extends TroupeError {
  readonly sessionId: string | undefined;
  constructor(sessionId: string | undefined, message: string, options?: { cause?: unknown }) {
    super(
      'store_corrupt',
      sessionId === undefined
        ? `The store is damaged: ${message}`
        : `The stored record of session "${sessionId}" is damaged: ${message}`,
      options,
    );
    this.sessionId = sessionId;
  }
}

/** The store was written by a different version of Troupe's storage layout. */
export class StoreLayoutError extends TroupeError {
  readonly found: number | string;
  readonly expected: number;
  constructor(where: string, found: number | string, expected: number) {
    super(
      'store_layout',
      `${where} was written with storage layout ${String(found)}; this version of Troupe reads layout ${expected}. Migrate it or start a new store.`,
    );
    this.found = found;
    this.expected = expected;
  }
}

/** The store was used after `close()`. */
export class StoreClosedError extends TroupeError {
  constructor() {
    super('store_closed', 'The store is closed.');
  }
}
