/** One difference between two JSON values, at a path such as `messages[3].content`. */
export interface JsonDifference {
  path: string;
  /** `undefined` when the value is missing on that side. */
  expected: unknown;
  actual: unknown;
}

/**
 * The differences between two JSON values, as paths to the first place each one differs (an object's keys in
 * `expected`'s order, then the keys only `actual` has; arrays index by index). Paths matching one of `ignore` are
 * skipped, with what is below them: a pattern is a path where `*` stands for any one key or index
 * (`messages[*].content`, `settings.temperature`, `tools`).
 */
export function jsonDifferences(
  expected: unknown,
  actual: unknown,
  ignore: readonly string[] = [],
): JsonDifference[] {
  const ignored = ignore.map(ignorePattern);
  const differences: JsonDifference[] = [];
  const visit = (path: string, left: unknown, right: unknown): void => {
    if (path !== '' && ignored.some((pattern) => pattern.test(path))) return;
    if (Array.isArray(left) && Array.isArray(right)) {
      const length = Math.max(left.length, right.length);
      for (let index = 0; index < length; index++) visit(`${path}[${index}]`, left[index], right[index]);
      return;
    }
    if (isRecord(left) && isRecord(right)) {
      const keys = [...Object.keys(left), ...Object.keys(right).filter((key) => !Object.hasOwn(left, key))];
      for (const key of keys) visit(joinKey(path, key), own(left, key), own(right, key));
      return;
    }
    if (!Object.is(left, right))
      differences.push({ path: path === '' ? '(the whole value)' : path, expected: left, actual: right });
  };
  visit('', expected, actual);
  return differences;
}

/** `path: expected "…" got "…"`, one line per difference, long values cut in the middle. */
export function formatDifferences(differences: readonly JsonDifference[], limit = 10): string {
  const lines = differences
    .slice(0, limit)
    .map(({ path, expected, actual }) => `  ${path}: expected ${show(expected)} got ${show(actual)}`);
  if (differences.length > limit) lines.push(`  ... and ${differences.length - limit} more difference(s)`);
  return lines.join('\n');
}

const maxShown = 80;

function show(value: unknown): string {
  if (value === undefined) return '(missing)';
  const text = JSON.stringify(value) ?? String(value);
  if (text.length <= maxShown) return text;
  const half = Math.floor((maxShown - 1) / 2);
  return `${text.slice(0, half)}…${text.slice(-half)}`;
}

/** A key's own value: keys come from the compared JSON, and `__proto__` must not reach the prototype. */
function own(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function joinKey(path: string, key: string): string {
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

function ignorePattern(pattern: string): RegExp {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^.\\[\\]]+');
  return new RegExp(`^${source}$`);
}
