/**
 * A random UUID (crypto.randomUUID) as one flat string. Node joins a UUID from 20 pieces with `+`, which V8 keeps as
 * a tree of 14 strings (about 0.45 KB) for as long as the id lives: every run and session in flight holds its id.
 * Converting the string to a number makes V8 flatten it in place (the result, NaN, is not needed), leaving one
 * 36-character string.
 */
export function randomUuid(): string {
  const id = crypto.randomUUID();
  void Number(id);
  return id;
}
