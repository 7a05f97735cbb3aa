import { TroupeError } from '../core/errors.ts';
import {
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
} from './store-errors.ts';

/**
 * A store's error as data (strings and numbers), to cross from the writer thread to the thread that made the
 * commit, where `errorFromWire` builds it again: the same class, the same fields, the same message.
 */
export type WireError =
  | { kind: 'commit'; message: string; sessionId: string; reason: StoreCommitRefusal }
  | { kind: 'fenced' | 'leased'; message: string; sessionId: string; holder: LeaseHolderInfo }
  | { kind: 'corrupt'; message: string; sessionId: string | undefined }
  | { kind: 'io'; message: string; path: string; busy: boolean }
  | { kind: 'layout'; message: string; found: number | string; expected: number }
  | { kind: 'foreign'; message: string; path: string }
  | { kind: 'closed'; message: string };

/** The error as data; an error that is none of the store's is a StoreIoError of `path` with its message. */
export function errorToWire(error: unknown, path: string): WireError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof StoreCommitError)
    return { kind: 'commit', message, sessionId: error.sessionId, reason: error.reason };
  if (error instanceof SessionFencedError || error instanceof SessionLeasedError)
    return {
      kind: error instanceof SessionFencedError ? 'fenced' : 'leased',
      message,
      sessionId: error.sessionId,
      holder: { host: error.holder.host, pid: error.holder.pid, token: error.holder.token },
    };
  if (error instanceof StoreCorruptError) return { kind: 'corrupt', message, sessionId: error.sessionId };
  if (error instanceof StoreIoError) return { kind: 'io', message, path: error.path, busy: error.busy };
  if (error instanceof StoreLayoutError)
    return { kind: 'layout', message, found: error.found, expected: error.expected };
  if (error instanceof ForeignStoreError) return { kind: 'foreign', message, path: error.path };
  if (error instanceof StoreClosedError) return { kind: 'closed', message };
  const what = error instanceof TroupeError ? error.message : `the writer thread failed: ${message}`;
  return { kind: 'io', message: `The store "${path}" ${what}`, path, busy: false };
}

/** The error `errorToWire` described, built again. */
export function errorFromWire(wire: WireError): Error {
  const error = build(wire);
  // The message as it was made where the error was thrown (the constructors add their own words around it).
  error.message = wire.message;
  return error;
}

function build(wire: WireError): Error {
  switch (wire.kind) {
    case 'commit':
      return new StoreCommitError(wire.sessionId, wire.reason, wire.message);
    case 'fenced':
      return new SessionFencedError(wire.sessionId, wire.holder);
    case 'leased':
      return new SessionLeasedError(wire.sessionId, wire.holder);
    case 'corrupt':
      return new StoreCorruptError(wire.sessionId, wire.message);
    case 'io':
      return new StoreIoError(wire.path, wire.message, { busy: wire.busy });
    case 'layout':
      return new StoreLayoutError('the store', wire.found, wire.expected);
    case 'foreign':
      return new ForeignStoreError(wire.path);
    case 'closed':
      return new StoreClosedError();
  }
}
