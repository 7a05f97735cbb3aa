import { type Detector, isAsciiAlnum, type PiiMatch } from './detector.ts';

/**
 * An email address, checked once its bounds are known: a local part and a domain of labels ending in a letter TLD
 * or a punycode one (`xn--p1ai`). Letters and digits of any script count (internationalized addresses,
 * `почта@пример.рф`). Addresses are found from their `@` outwards (a pattern scanning the whole text costs about
 * 60 ns a character).
 *
 * Built on first use from a string: V8 checks a regular expression literal when it parses the file, even inside a
 * function never called, and this one's Unicode classes take about 2 ms, which every import of Troupe would pay.
 */
const emailShapeSource = String.raw`^[\p{L}\p{M}\p{N}_%+-][\p{L}\p{M}\p{N}._%+-]{0,63}@(?:[\p{L}\p{M}\p{N}](?:[\p{L}\p{M}\p{N}-]{0,61}[\p{L}\p{M}\p{N}])?\.){1,8}(?:\p{L}[\p{L}\p{M}]{1,62}|[Xx][Nn]--[A-Za-z0-9-]{1,59})$`;
let emailShape: RegExp | undefined;

function isEmailShape(candidate: string): boolean {
  emailShape ??= new RegExp(emailShapeSource, 'u');
  return emailShape.test(candidate);
}

const maxLocal = 64;
const maxDomain = 254;

/** A letter, mark or digit beyond ASCII (one UTF-16 unit of it: surrogate pairs count as such). */
const wideWordChar = /[\p{L}\p{M}\p{N}\ud800-\udfff]/u;

function isWide(code: number, text: string, at: number): boolean {
  return code >= 0x80 && wideWordChar.test(text[at] as string);
}

function isLocalChar(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  return (
    isAsciiAlnum(code) ||
    code === 46 || // .
    code === 95 || // _
    code === 37 || // %
    code === 43 || // +
    code === 45 || // -
    isWide(code, text, at)
  );
}

function isDomainChar(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  return isAsciiAlnum(code) || code === 46 || code === 45 || isWide(code, text, at);
}

function find(text: string, _settings: unknown, found: PiiMatch[]): void {
  let at = text.indexOf('@');
  while (at !== -1) {
    let start = at;
    while (start > 0 && at - start < maxLocal && isLocalChar(text, start - 1)) start--;
    // A local part does not start with a dot ("see.bob@x.io" is bob's, after a sentence's dot).
    while (start < at && text.charCodeAt(start) === 46) start++;
    let end = at + 1;
    while (end < text.length && end - at < maxDomain && isDomainChar(text, end)) end++;
    // A sentence's full stop or a dash after the address is not part of it.
    while (end > at + 1 && (text.charCodeAt(end - 1) === 46 || text.charCodeAt(end - 1) === 45)) end--;
    const before = start > 0 ? text.charCodeAt(start - 1) : 0;
    const after = end < text.length ? text.charCodeAt(end) : 0;
    // Part of a longer token (a URL's user info, `@scope/pkg@1.2.3`) does not count.
    const glued = before === 64 || after === 64 || after === 95;
    if (start < at && !glued && isEmailShape(text.slice(start, end)))
      found.push({ kind: 'email', start, end });
    at = text.indexOf('@', Math.max(at + 1, end));
  }
}

/**
 * A local part being written (any run of its characters at the end: it may meet an `@`), or an address whose
 * domain may still grow.
 */
function pendingFrom(text: string): number {
  const length = text.length;
  let at = length;
  while (at > 0 && length - at < maxDomain && isDomainChar(text, at - 1)) at--;
  if (at > 0 && text.charCodeAt(at - 1) === 64) {
    const sign = at - 1;
    let start = sign;
    while (start > 0 && sign - start < maxLocal && isLocalChar(text, start - 1)) start--;
    // Without a local part before it, an `@` starts no address (and one after it would be glued to it).
    return start < sign ? start : length;
  }
  let start = length;
  while (start > 0 && length - start < maxLocal && isLocalChar(text, start - 1)) start--;
  return start;
}

export const emailDetector: Detector = {
  kind: 'email',
  maxPending: maxLocal + 1 + maxDomain,
  find,
  pendingFrom,
};
