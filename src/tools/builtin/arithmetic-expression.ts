import { ToolInputError } from '../../core/errors.ts';
import type { BinaryOperator } from './python-number.ts';

/**
 * The syntax tree of an arithmetic expression. Only numbers and operators exist in this language: no names, no
 * calls, no attribute or index access, so nothing in an expression can refer to anything outside it.
 */
export type ArithmeticNode =
  | { kind: 'number'; text: string }
  | { kind: 'unary'; operator: '+' | '-'; operand: ArithmeticNode }
  | { kind: 'binary'; operator: BinaryOperator; left: ArithmeticNode; right: ArithmeticNode };

export interface ParseLimits {
  /** Longest accepted expression, in characters. */
  maxLength: number;
  /** Deepest accepted nesting of parentheses, unary signs and powers together. */
  maxDepth: number;
}

type Token =
  | { kind: 'number'; text: string; at: number }
  | { kind: 'operator'; operator: BinaryOperator; at: number }
  | { kind: 'paren'; open: boolean; at: number };

/** Signs people and models write for the ASCII operators. */
const operatorAliases = new Map<string, BinaryOperator>([
  ['×', '*'],
  ['÷', '/'],
  ['−', '-'],
]);

/** Python's decimal literals: digits may be grouped with single underscores (1_000_000). */
const digits = '[0-9](?:_?[0-9])*';
const numberPattern = new RegExp(
  `(?:${digits}(?:\\.(?:${digits})?)?|\\.${digits})(?:[eE][+-]?${digits})?`,
  'y',
);

function isSpace(char: string): boolean {
  return char === ' ' || char === '\t' || char === '\n' || char === '\r';
}

function describeChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  const printable = code > 0x20 && code < 0x7f;
  return printable ? `"${char}"` : `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < source.length) {
    const char = source[at] as string;
    if (isSpace(char)) {
      at++;
      continue;
    }
    if (char === '(' || char === ')') {
      tokens.push({ kind: 'paren', open: char === '(', at });
      at++;
      continue;
    }
    if (char === '*' || char === '/') {
      const doubled = source[at + 1] === char;
      tokens.push({ kind: 'operator', operator: doubled ? (`${char}${char}` as '**' | '//') : char, at });
      at += doubled ? 2 : 1;
      continue;
    }
    if (char === '+' || char === '-' || char === '%') {
      tokens.push({ kind: 'operator', operator: char, at });
      at++;
      continue;
    }
    const alias = operatorAliases.get(char);
    if (alias !== undefined) {
      tokens.push({ kind: 'operator', operator: alias, at });
      at++;
      continue;
    }
    numberPattern.lastIndex = at;
    const number = numberPattern.exec(source);
    if (number !== null) {
      if (/^0[0-9_]*[1-9]/.test(number[0]) && /^[0-9_]+$/.test(number[0]))
        throw syntaxError(
          `leading zeros in decimal integer literals are not permitted (position ${at + 1}); write ${number[0].replace(/^[0_]+/, '')}`,
        );
      tokens.push({ kind: 'number', text: number[0].replaceAll('_', ''), at });
      at += number[0].length;
      const next = source[at];
      if (next !== undefined && /[0-9A-Za-z_.]/.test(next))
        throw syntaxError(`malformed number at position ${at + 1}`);
      continue;
    }
    if (char === '^')
      throw syntaxError(`"^" at position ${at + 1} is not an operator here: write powers as ** (2 ** 10)`);
    throw syntaxError(
      `unexpected ${describeChar(String.fromCodePoint(source.codePointAt(at) ?? 0))} at position ${at + 1}: only numbers, + - * / // % ** (also × ÷ −) and parentheses are allowed`,
    );
  }
  return tokens;
}

function syntaxError(detail: string): ToolInputError {
  return new ToolInputError(`Invalid expression: ${detail}.`);
}

/**
 * Parses with Python's grammar for arithmetic: `+ -` bind loosest and `* / // %` tighter, both left-associative;
 * then unary `+ -`; then `**`, right-associative and binding tighter than a unary sign on its left (-2**2 is -4)
 * but looser than one on its right (2**-1 is 0.5).
 */
export function parseArithmetic(source: string, limits: ParseLimits): ArithmeticNode {
  if (source.length > limits.maxLength)
    throw new ToolInputError(
      `The expression is ${source.length} characters long; at most ${limits.maxLength} are accepted.`,
    );
  const tokens = tokenize(source);
  let position = 0;
  let depth = 0;

  const peek = (): Token | undefined => tokens[position];
  const enter = (): void => {
    depth++;
    if (depth > limits.maxDepth)
      throw syntaxError(`nested more than ${limits.maxDepth} levels deep (parentheses, signs and powers)`);
  };

  const sum = (): ArithmeticNode => {
    let left = term();
    for (let token = peek(); token?.kind === 'operator'; token = peek()) {
      if (token.operator !== '+' && token.operator !== '-') break;
      position++;
      left = { kind: 'binary', operator: token.operator, left, right: term() };
    }
    return left;
  };

  const term = (): ArithmeticNode => {
    let left = factor();
    for (let token = peek(); token?.kind === 'operator'; token = peek()) {
      const { operator } = token;
      if (operator !== '*' && operator !== '/' && operator !== '//' && operator !== '%') break;
      position++;
      left = { kind: 'binary', operator, left, right: factor() };
    }
    return left;
  };

  const factor = (): ArithmeticNode => {
    enter();
    const token = peek();
    let node: ArithmeticNode;
    if (token?.kind === 'operator' && (token.operator === '+' || token.operator === '-')) {
      position++;
      node = { kind: 'unary', operator: token.operator, operand: factor() };
    } else {
      node = power();
    }
    depth--;
    return node;
  };

  const power = (): ArithmeticNode => {
    const base = primary();
    const token = peek();
    if (token?.kind === 'operator' && token.operator === '**') {
      position++;
      return { kind: 'binary', operator: '**', left: base, right: factor() };
    }
    return base;
  };

  const primary = (): ArithmeticNode => {
    const token = peek();
    if (token === undefined) throw syntaxError('it ends where a number or "(" was expected');
    if (token.kind === 'number') {
      position++;
      return { kind: 'number', text: token.text };
    }
    if (token.kind === 'paren' && token.open) {
      position++;
      enter();
      const inner = sum();
      depth--;
      const close = peek();
      if (close?.kind !== 'paren' || close.open)
        throw syntaxError(
          close === undefined ? 'a "(" is never closed' : `expected ")" at position ${close.at + 1}`,
        );
      position++;
      return inner;
    }
    throw syntaxError(`expected a number or "(" at position ${token.at + 1}`);
  };

  if (tokens.length === 0) throw syntaxError('it is empty');
  const tree = sum();
  const rest = peek();
  if (rest !== undefined)
    throw syntaxError(
      rest.kind === 'paren' && !rest.open
        ? `unmatched ")" at position ${rest.at + 1}`
        : `expected an operator at position ${rest.at + 1}`,
    );
  return tree;
}
