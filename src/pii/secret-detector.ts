import { type Detector, isWordChar, type PiiMatch } from './detector.ts';

/**
 * One kind of key or token, by its provider's documented prefix (the patterns gitleaks and secretlint use): the
 * pattern and the capture group that is the secret (0: the whole match); for streaming, the prefixes it starts
 * with, the characters that follow them and its longest length.
 */
interface KeyShape {
  pattern: RegExp;
  group: number;
  check?: (value: string) => boolean;
  prefixes: readonly string[];
  body: RegExp;
  maxLength: number;
}

function lettersAndDigits(value: string): boolean {
  return /\d/.test(value) && /[A-Za-z]/.test(value);
}

/** Keys with no documented bound are held back while streamed up to this length (longer ones are cut there). */
const longest = 4096;

const keyShapes: readonly KeyShape[] = [
  // Anthropic (sk-ant-api03-...), OpenAI project, service-account, admin and legacy keys. A bare `sk-` needs 20+
  // characters of letters AND digits.
  {
    pattern: /(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}/g,
    group: 0,
    prefixes: ['sk-'],
    body: /^[A-Za-z0-9_-]*$/,
    maxLength: longest,
  },
  {
    pattern: /(?<![\w-])sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}/g,
    group: 0,
    prefixes: ['sk-'],
    body: /^[A-Za-z0-9_-]*$/,
    maxLength: longest,
  },
  {
    pattern: /(?<![\w-])sk-[A-Za-z0-9]{20,}(?![\w-])/g,
    group: 0,
    check: lettersAndDigits,
    prefixes: ['sk-'],
    body: /^[A-Za-z0-9]*$/,
    maxLength: longest,
  },
  // AWS access key ids.
  {
    pattern:
      /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
    group: 0,
    prefixes: ['AKIA', 'ASIA', 'ABIA', 'ACCA', 'AGPA', 'AIDA', 'AROA', 'ANPA', 'ANVA', 'AIPA'],
    body: /^[A-Z0-9]*$/,
    maxLength: 20,
  },
  // GitHub personal, OAuth, user-to-server, server-to-server, refresh tokens and fine-grained PATs.
  {
    pattern: /(?<![\w-])gh[pousr]_[A-Za-z0-9]{36,255}/g,
    group: 0,
    prefixes: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'],
    body: /^[A-Za-z0-9]*$/,
    maxLength: 259,
  },
  {
    pattern: /(?<![\w-])github_pat_[A-Za-z0-9_]{50,255}/g,
    group: 0,
    prefixes: ['github_pat_'],
    body: /^[A-Za-z0-9_]*$/,
    maxLength: 266,
  },
  // GitLab personal access tokens.
  {
    pattern: /(?<![\w-])glpat-[A-Za-z0-9_-]{20,}/g,
    group: 0,
    prefixes: ['glpat-'],
    body: /^[A-Za-z0-9_-]*$/,
    maxLength: longest,
  },
  // Google API keys.
  {
    pattern: /(?<![\w-])AIza[A-Za-z0-9_-]{35}(?![\w-])/g,
    group: 0,
    prefixes: ['AIza'],
    body: /^[A-Za-z0-9_-]*$/,
    maxLength: 39,
  },
  // Slack bot, user, app-level and refresh tokens, and incoming webhooks.
  {
    pattern: /(?<![\w-])xox[abposre]-[A-Za-z0-9-]{10,250}/g,
    group: 0,
    prefixes: ['xoxa-', 'xoxb-', 'xoxp-', 'xoxo-', 'xoxs-', 'xoxr-', 'xoxe-'],
    body: /^[A-Za-z0-9-]*$/,
    maxLength: 255,
  },
  {
    pattern: /(?<![\w-])xapp-\d-[A-Za-z0-9-]{10,250}/g,
    group: 0,
    prefixes: ['xapp-'],
    body: /^[A-Za-z0-9-]*$/,
    maxLength: 257,
  },
  {
    pattern: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/]{20,}/g,
    group: 0,
    prefixes: ['https://hooks.slack.com/services/'],
    body: /^[A-Za-z0-9/]*$/,
    maxLength: longest,
  },
  // Stripe secret and restricted keys (publishable pk_ keys are public by design).
  {
    pattern: /(?<![\w-])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}/g,
    group: 0,
    prefixes: ['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_'],
    body: /^[A-Za-z0-9]*$/,
    maxLength: 255,
  },
  // Hugging Face, npm, SendGrid.
  {
    pattern: /(?<![\w-])hf_[A-Za-z0-9]{30,}/g,
    group: 0,
    check: lettersAndDigits,
    prefixes: ['hf_'],
    body: /^[A-Za-z0-9]*$/,
    maxLength: longest,
  },
  {
    pattern: /(?<![\w-])npm_[A-Za-z0-9]{36}(?![\w-])/g,
    group: 0,
    prefixes: ['npm_'],
    body: /^[A-Za-z0-9]*$/,
    maxLength: 40,
  },
  {
    pattern: /(?<![\w-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}/g,
    group: 0,
    prefixes: ['SG.'],
    body: /^[A-Za-z0-9_.-]*$/,
    maxLength: 69,
  },
  // JSON Web Tokens: a JSON header and payload (base64url of `{"`), then the signature (empty for alg none).
  {
    pattern: /(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
    group: 0,
    prefixes: ['eyJ'],
    body: /^[A-Za-z0-9_.-]*$/,
    maxLength: longest,
  },
];

/** Bearer tokens in Authorization headers or prose: the token, not the word. */
const bearerPattern = /\b[Bb]earer\s+([A-Za-z0-9._~+/-]{16,}=*)/g;

/**
 * PEM private keys: the whole block, or from its header on while the lines look like a key's (base64, or the
 * `Proc-Type:` headers of an encrypted one) when its end line is missing (a cut-off or streamed key).
 */
const pemPattern =
  /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]{0,8192}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----/g;
/** A line break, or one escaped in a JSON string (`\n`): keys are pasted into tool arguments too. */
const lineBreak = String.raw`(?:\r?\n|\\r\\n|\\n)`;
const openPemPattern = new RegExp(
  String.raw`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[ \t]*${lineBreak}(?:[ \t]*${lineBreak})?(?:[A-Za-z0-9+/=]+(?=[ \t]*${lineBreak}|[ \t]*$|")|[A-Za-z-]+: [^\r\n"\\]*))+`,
  'g',
);
const lineBreaks = new RegExp(lineBreak);
const pemHeader = /^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/;
const wholePem = new RegExp(pemPattern.source);
const maxPem = 8192 + 128;

/**
 * A cheap test that rules a text out before the key patterns run (most text holds no key): one alternation of
 * their prefixes, which V8 scans faster than a list of `includes`.
 */
const secretHint =
  /sk-|[sr]k_|A[KSBCGIRNP][IPCSAIOV]A|gh[pousr]_|github_pat_|glpat-|AIza|xox|xapp-|hooks\.slack|hf_|npm_|SG\.|eyJ|[Bb]earer|PRIVATE KEY/;

function find(text: string, _settings: unknown, found: PiiMatch[]): void {
  if (!secretHint.test(text)) return;
  for (const { pattern, group, check } of keyShapes) collect(text, pattern, group, check, found);
  collect(text, bearerPattern, 1, lettersAndDigits, found);
  if (text.includes('PRIVATE KEY')) {
    collect(text, pemPattern, 0, undefined, found);
    const whole = found.length;
    for (const match of text.matchAll(openPemPattern)) {
      const start = match.index;
      let covered = false;
      for (let i = 0; i < whole; i++) {
        const other = found[i] as PiiMatch;
        if (start >= other.start && start < other.end) covered = true;
      }
      if (!covered) found.push({ kind: 'secret', start, end: start + match[0].length });
    }
  }
}

function collect(
  text: string,
  pattern: RegExp,
  group: number,
  check: ((value: string) => boolean) | undefined,
  found: PiiMatch[],
): void {
  for (const match of text.matchAll(pattern)) {
    const value = match[group] as string;
    if (check && !check(value)) continue;
    const start = match.index + match[0].length - value.length;
    found.push({ kind: 'secret', start, end: start + value.length });
  }
}

/** Characters of a key or token, and of the prefixes above (`https://`, `SG.`). */
function isTokenChar(code: number): boolean {
  // \w - . / + = ~ :
  return (
    isWordChar(code) ||
    code === 45 ||
    code === 46 ||
    code === 47 ||
    code === 43 ||
    code === 61 ||
    code === 126 ||
    code === 58
  );
}

/** The first characters of every prefix: a tail starting otherwise begins no key. */
const prefixStarts: ReadonlySet<number> = new Set(
  keyShapes.flatMap((shape) => shape.prefixes.map((prefix) => prefix.charCodeAt(0))),
);

/** Whether `tail` is the beginning of a key of some shape, or of a shape's prefix. */
function startsKey(tail: string): boolean {
  if (!prefixStarts.has(tail.charCodeAt(0))) return false;
  for (const shape of keyShapes) {
    if (tail.length > shape.maxLength) continue;
    for (const prefix of shape.prefixes) {
      if (tail.length <= prefix.length) {
        if (prefix.startsWith(tail)) return true;
      } else if (tail.startsWith(prefix) && shape.body.test(tail.slice(prefix.length))) return true;
    }
  }
  return false;
}

/**
 * Where a Bearer token may be under way: the word `Bearer` (or its beginning) at the end, or after it white space
 * and a token being written (the token characters at the end start at `token`).
 */
function bearerPendingFrom(text: string, token: number): number {
  // The word, or its beginning, at the end (`Authorization:Bear`).
  for (let at = Math.max(token, text.length - 6); at < text.length; at++)
    if (isBearerWord(text, at, text.length, true)) return at;
  let word = token;
  while (word > 0 && text.length - word < longest && isSpace(text.charCodeAt(word - 1))) word--;
  if (word === token) return text.length;
  return isBearerWord(text, word - 6, word, false) ? word - 6 : text.length;
}

/** `Bearer` or `bearer` at [start, end) (or its beginning, with `partial`), not glued to a word before it. */
function isBearerWord(text: string, start: number, end: number, partial: boolean): boolean {
  if (start < 0 || end - start > 6 || (!partial && end - start !== 6)) return false;
  if (start > 0 && isWordChar(text.charCodeAt(start - 1))) return false;
  const first = text.charCodeAt(start);
  if (first !== 66 && first !== 98) return false;
  return 'earer'.startsWith(text.slice(start + 1, end));
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9 || code === 12 || code === 11;
}

/** What may follow a PEM header before the key's end: base64 lines, `Name: value` headers, blank lines. */
const keyLine = /^(?:[A-Za-z0-9+/=]*|[A-Za-z-]+: .*)[ \t]*\r?$/;
/** The last line so far: the beginning of a key line, a header or the end line. */
const partialKeyLine =
  /^(?:[A-Za-z0-9+/=]*|[A-Za-z-]+(?::.*)?|-{1,5}(?:E(?:N(?:D(?: [A-Z0-9 ]*-{0,5})?)?)?)?)[ \t\r]*\\?$/;
const beginMarker = '-----BEGIN ';

function pemPendingFrom(text: string): number {
  const begin = text.lastIndexOf('-----BEGIN');
  if (begin !== -1) {
    const tail = text.slice(begin);
    const header = pemHeader.exec(tail);
    if (!header) {
      // The header itself is still being written.
      if (/^-----BEGIN[ A-Z0-9-]*$/.test(tail)) return begin;
    } else if (!tail.includes('-----END') || !wholePem.test(tail)) {
      const lines = tail.slice(header[0].length).split(lineBreaks);
      const last = lines.pop() as string;
      if (lines.every((line) => keyLine.test(line)) && partialKeyLine.test(last)) return begin;
    }
  }
  // A header's first characters at the very end.
  for (let k = Math.min(beginMarker.length, text.length); k > 0; k--)
    if (text.endsWith(beginMarker.slice(0, k))) return text.length - k;
  return text.length;
}

function pendingFrom(text: string): number {
  let from = text.length;
  let start = text.length;
  while (start > 0 && text.length - start < longest && isTokenChar(text.charCodeAt(start - 1))) start--;
  for (let at = start; at < text.length; at++) {
    // Keys start where no word character or dash precedes them.
    const before = at > 0 ? text.charCodeAt(at - 1) : 0;
    if (at > start && (isWordChar(before) || before === 45)) continue;
    if (startsKey(text.slice(at))) {
      from = at;
      break;
    }
  }
  from = Math.min(from, bearerPendingFrom(text, start));
  if (text.includes('-----')) from = Math.min(from, pemPendingFrom(text));
  return from;
}

export const secretDetector: Detector = {
  kind: 'secret',
  maxPending: maxPem,
  find,
  pendingFrom,
};
