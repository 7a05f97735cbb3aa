/**
 * Copies of arrays with more items at the end, each made at its final length by a loop. `concat` goes through the
 * runtime's generic C++ builtin for arrays like a history (about 1,400 machine instructions a call, more than the
 * loop's copy of a conversation's few dozen references); a spread grows its array by push, reallocating on the way
 * and keeping spare slots for as long as the copy is held.
 */

/** `items` and then `last`, in a new array. */
export function withLast<T>(items: readonly T[], last: T): T[] {
  const length = items.length;
  const all: T[] = new Array(length + 1);
  for (let index = 0; index < length; index++) all[index] = items[index] as T;
  all[length] = last;
  return all;
}
