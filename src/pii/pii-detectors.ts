import { cardLibrary, ibanLibrary, phoneLibrary } from './pii-libraries.ts';

/** The kinds of personal data and secrets masking finds. */
export type PiiKind = 'email' | 'phone' | 'card' | 'iban' | 'secret';

export const piiKinds: readonly PiiKind[] = ['email', 'phone', 'card', 'iban', 'secret'];

/** One value found in a text: `text.slice(start, end)`. */
export interface PiiMatch {
  kind: PiiKind;
  start: number;
  end: number;
}

/** What a detector needs to know. */
export interface DetectorSettings {
  kinds: ReadonlySet<PiiKind>;
  /** ISO country code for phone numbers written without a `+` prefix; without it only international ones match. */
  defaultCountry?: string | undefined;
}

/**
 * An email address, checked once its bounds are known: a local part and a domain of labels with a letter TLD.
 * Addresses are found from their `@` outwards (a pattern scanning the whole text costs about 60 ns a character).
 */
const emailShape =
  /^[A-Za-z0-9_%+-][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}$/;

function isLocalChar(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 46 || // .
    code === 95 || // _
    code === 37 || // %
    code === 43 || // +
    code === 45 // -
  );
}

function isDomainChar(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 46 ||
    code === 45
  );
}

function findEmails(text: string, found: PiiMatch[]): void {
  let at = text.indexOf('@');
  while (at !== -1) {
    let start = at;
    while (start > 0 && at - start < 64 && isLocalChar(text.charCodeAt(start - 1))) start--;
    // A local part does not start with a dot ("see.bob@x.io" is bob's, after a sentence's dot).
    while (start < at && text.charCodeAt(start) === 46) start++;
    let end = at + 1;
    while (end < text.length && end - at < 254 && isDomainChar(text.charCodeAt(end))) end++;
    // A sentence's full stop or a dash after the address is not part of it.
    while (end > at + 1 && (text.charCodeAt(end - 1) === 46 || text.charCodeAt(end - 1) === 45)) end--;
    const before = start > 0 ? text.charCodeAt(start - 1) : 0;
    const after = end < text.length ? text.charCodeAt(end) : 0;
    // Part of a longer token (a URL's user info, `@scope/pkg@1.2.3`) does not count.
    const glued = before === 64 || after === 64 || after === 95;
    if (start < at && !glued && emailShape.test(text.slice(start, end)))
      found.push({ kind: 'email', start, end });
    at = text.indexOf('@', Math.max(at + 1, end));
  }
}

/** 13 to 19 digits, optionally grouped by single spaces or dashes; checked by card-validator afterwards. */
const cardPattern = /(?<![\w.,/-])\d(?:[ -]?\d){12,18}(?![\w/-]|[.,]\d)/g;

/** Two letters, two check digits and up to 30 letters or digits, optionally grouped by single spaces. */
const ibanPattern = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}(?![A-Za-z0-9])/g;

/**
 * API keys and tokens by their providers' documented prefixes (the patterns gitleaks and secretlint use). Each
 * entry: the pattern, and the capture group that is the secret (0: the whole match).
 */
const secretPatterns: readonly { pattern: RegExp; group: number; check?: (value: string) => boolean }[] = [
  // Anthropic (sk-ant-api03-..., sk-ant-admin01-...)
  { pattern: /(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}/g, group: 0 },
  // OpenAI project, service-account, admin and legacy keys. A bare `sk-` needs 20+ characters of letters AND digits.
  { pattern: /(?<![\w-])sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { pattern: /(?<![\w-])sk-[A-Za-z0-9]{20,}(?![\w-])/g, group: 0, check: lettersAndDigits },
  // AWS access key ids.
  {
    pattern:
      /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
    group: 0,
  },
  // GitHub personal, OAuth, user-to-server, server-to-server, refresh tokens and fine-grained PATs.
  { pattern: /(?<![\w-])gh[pousr]_[A-Za-z0-9]{36,255}/g, group: 0 },
  { pattern: /(?<![\w-])github_pat_[A-Za-z0-9_]{50,255}/g, group: 0 },
  // GitLab personal access tokens.
  { pattern: /(?<![\w-])glpat-[A-Za-z0-9_-]{20,}/g, group: 0 },
  // Google API keys.
  { pattern: /(?<![\w-])AIza[A-Za-z0-9_-]{35}(?![\w-])/g, group: 0 },
  // Slack bot, user, app-level and refresh tokens, and incoming webhooks.
  { pattern: /(?<![\w-])xox[abposre]-[A-Za-z0-9-]{10,250}/g, group: 0 },
  { pattern: /(?<![\w-])xapp-\d-[A-Za-z0-9-]{10,250}/g, group: 0 },
  { pattern: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/]{20,}/g, group: 0 },
  // Stripe secret and restricted keys (publishable pk_ keys are public by design).
  { pattern: /(?<![\w-])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}/g, group: 0 },
  // Hugging Face, npm, SendGrid.
  { pattern: /(?<![\w-])hf_[A-Za-z0-9]{30,}/g, group: 0, check: lettersAndDigits },
  { pattern: /(?<![\w-])npm_[A-Za-z0-9]{36}(?![\w-])/g, group: 0 },
  { pattern: /(?<![\w-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}/g, group: 0 },
  // JSON Web Tokens: a JSON header and payload (base64url of `{"`), then the signature (empty for alg none).
  { pattern: /(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, group: 0 },
  // Bearer tokens in Authorization headers or prose: the token, not the word.
  { pattern: /\b[Bb]earer\s+([A-Za-z0-9._~+/-]{16,}=*)/g, group: 1, check: lettersAndDigits },
  // PEM private keys.
  {
    pattern: /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]{0,8192}?-----END (?:[A-Z]+ )?PRIVATE KEY-----/g,
    group: 0,
  },
];

/**
 * A cheap test that rules a text out before the key patterns run (most text holds no key): one alternation of
 * their prefixes, which V8 scans faster than a list of `includes`.
 */
const secretHint =
  /sk-|[sr]k_|A[KSBCGIRNP][IPCSAIOV]A|gh[pousr]_|github_pat_|glpat-|AIza|xox|xapp-|hooks\.slack|hf_|npm_|SG\.|eyJ|[Bb]earer|PRIVATE KEY/;

const sevenDigits = /\d(?:\D{0,3}\d){6}/;
const ibanHint = /[A-Za-z]{2}\d{2}/;

function lettersAndDigits(value: string): boolean {
  return /\d/.test(value) && /[A-Za-z]/.test(value);
}

/** Priority when two matches overlap: secrets first (a token may hold digit runs), then the stricter checks. */
const priority: Record<PiiKind, number> = { secret: 0, email: 1, iban: 2, card: 3, phone: 4 };

/** Every value of the enabled kinds in `text`, in order, without overlaps. */
export function findPii(text: string, settings: DetectorSettings): PiiMatch[] {
  if (text.length < 6) return [];
  const { kinds } = settings;
  const found: PiiMatch[] = [];
  if (kinds.has('secret') && secretHint.test(text)) findSecrets(text, found);
  if (kinds.has('email') && text.includes('@')) findEmails(text, found);
  const digits = sevenDigits.test(text);
  if (kinds.has('iban') && digits && ibanHint.test(text)) findIbans(text, found);
  if (kinds.has('card') && digits) findAll(text, cardPattern, 'card', found, isCardNumber);
  if (kinds.has('phone') && digits) findPhones(text, settings.defaultCountry, found);
  if (found.length <= 1) return found;
  found.sort((a, b) => priority[a.kind] - priority[b.kind] || a.start - b.start);
  const kept: PiiMatch[] = [];
  for (const match of found) {
    if (!kept.some((other) => match.start < other.end && other.start < match.end)) kept.push(match);
  }
  return kept.sort((a, b) => a.start - b.start);
}

function findAll(
  text: string,
  pattern: RegExp,
  kind: PiiKind,
  found: PiiMatch[],
  check?: (value: string) => boolean,
): void {
  for (const match of text.matchAll(pattern)) {
    if (check && !check(match[0])) continue;
    found.push({ kind, start: match.index, end: match.index + match[0].length });
  }
}

function findSecrets(text: string, found: PiiMatch[]): void {
  for (const { pattern, group, check } of secretPatterns) {
    for (const match of text.matchAll(pattern)) {
      const value = match[group] as string;
      if (check && !check(value)) continue;
      const start = match.index + match[0].length - value.length;
      found.push({ kind: 'secret', start, end: start + value.length });
    }
  }
}

/** Known networks' prefixes and lengths, and the Luhn checksum (UnionPay included). */
function isCardNumber(candidate: string): boolean {
  const digits = candidate.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  // Grouping must be regular: one kind of separator, or none.
  if (candidate.includes(' ') && candidate.includes('-')) return false;
  // Luhn first: it rules out nine numbers in ten for a fraction of card-validator's cost (about 40 µs a call).
  if (!luhn(digits)) return false;
  let valid = cardVerdicts.get(digits);
  if (valid === undefined) {
    valid = cardLibrary().number(digits, { luhnValidateUnionPay: true }).isValid;
    if (cardVerdicts.size >= 2_048) cardVerdicts.clear();
    cardVerdicts.set(digits, valid);
  }
  return valid;
}

/** Card numbers already judged by card-validator. */
const cardVerdicts = new Map<string, boolean>();

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let digit = digits.charCodeAt(i) - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/**
 * The pattern may take a following word that happens to be letters and digits ("DE89 ... 00 AB12"): a candidate
 * that fails is shortened group by group before giving up.
 */
function findIbans(text: string, found: PiiMatch[]): void {
  const iban = ibanLibrary();
  for (const match of text.matchAll(ibanPattern)) {
    let candidate = match[0];
    for (;;) {
      const compact = candidate.replace(/ /g, '').toUpperCase();
      if (compact.length >= 15 && iban.isValidIBAN(compact)) {
        found.push({ kind: 'iban', start: match.index, end: match.index + candidate.length });
        break;
      }
      const space = candidate.lastIndexOf(' ');
      if (space < 0) break;
      candidate = candidate.slice(0, space);
    }
  }
}

/** A character that glues a number to an identifier (`INV-2024-000123`, `#4155552671`, `id_2125550199`). */
const identifierGlue = /[\w#/-]/;

/**
 * Where a phone number may be: digits with the separators phone numbers use, 7 or more of them. Only these runs
 * are handed to libphonenumber (about 50 µs a call), and only when no other value claimed them (a card number).
 */
const phoneCandidate = /(?<![\w#/+.-])[+(]?\d[\d ().-]{5,30}\d/g;

/** Phone candidates already judged (the same number tends to come back): text to the spans found in it. */
const phoneVerdicts = new Map<string, readonly { start: number; end: number }[]>();
const maxVerdicts = 2_048;

function findPhones(text: string, defaultCountry: string | undefined, found: PiiMatch[]): void {
  const claimed = found.length;
  for (const candidate of text.matchAll(phoneCandidate)) {
    const at = candidate.index;
    const run = candidate[0];
    if (countDigits(run) < 7) continue;
    let overlaps = false;
    for (let i = 0; i < claimed; i++) {
      const other = found[i] as PiiMatch;
      if (at < other.end && other.start < at + run.length) overlaps = true;
    }
    if (overlaps) continue;
    for (const span of phonesIn(run, defaultCountry)) {
      const start = at + span.start;
      const end = at + span.end;
      const before = text[start - 1];
      const after = text[end];
      if ((before && identifierGlue.test(before)) || (after && identifierGlue.test(after))) continue;
      found.push({ kind: 'phone', start, end });
    }
  }
}

function phonesIn(
  run: string,
  defaultCountry: string | undefined,
): readonly { start: number; end: number }[] {
  const key = `${defaultCountry ?? ''}\u0000${run}`;
  let spans = phoneVerdicts.get(key);
  if (spans === undefined) {
    const options = defaultCountry ? { defaultCountry } : {};
    spans = phoneLibrary()
      .findPhoneNumbersInText(run, options)
      .map((match) => ({ start: match.startsAt, end: match.endsAt }));
    if (phoneVerdicts.size >= maxVerdicts) phoneVerdicts.clear();
    phoneVerdicts.set(key, spans);
  }
  return spans;
}

function countDigits(text: string): number {
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) digits++;
  }
  return digits;
}
