import { expect } from 'vitest';
import { StoreCommitError } from '../../src/persistence/store-errors.ts';

/** Runs a commit that must be refused: returns its StoreCommitError (for its reason), or fails the test. */
export function commitRefusal(run: () => unknown): StoreCommitError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(StoreCommitError);
    return error as StoreCommitError;
  }
  throw new Error('the commit was not refused');
}
