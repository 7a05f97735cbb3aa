import { ToolInputError } from '../../core/errors.ts';
import { roundedQuotient } from './exact-rounding.ts';

/**
 * Numbers with Python's arithmetic: an `int` is a bigint (exact, of any size up to a bound), a `float` is a
 * JavaScript number (the same IEEE double Python uses). Each operation follows CPython's rules for mixing the two,
 * for the signs of `//` and `%`, for `**` and for the errors it raises, so the calculator answers what Python would.
 */
export type PyNumber = bigint | number;

/** Bounds that keep every operation's work small whatever the input. */
export interface NumberLimits {
  /** An integer result with more decimal digits than this is an error instead of a computation. */
  maxDigits: number;
}

/** The operators of an arithmetic expression. */
export type BinaryOperator = '+' | '-' | '*' | '/' | '//' | '%' | '**';

export function applyBinary(
  operator: BinaryOperator,
  left: PyNumber,
  right: PyNumber,
  limits: NumberLimits,
): PyNumber {
  if (typeof left === 'bigint' && typeof right === 'bigint') {
    switch (operator) {
      case '+':
        return checkedInt(left + right, limits);
      case '-':
        return checkedInt(left - right, limits);
      case '*':
        if (bitLength(left) + bitLength(right) > maxBits(limits) + 8) throw tooManyDigits(limits);
        return checkedInt(left * right, limits);
      case '/':
        return intTrueDivide(left, right);
      case '//':
        return intFloorDivide(left, right);
      case '%':
        return intModulo(left, right);
      case '**':
        return intPower(left, right, limits);
    }
  }
  const x = toFloat(left);
  const y = toFloat(right);
  switch (operator) {
    case '+':
      return x + y;
    case '-':
      return x - y;
    case '*':
      return x * y;
    case '/':
      if (y === 0) throw new ToolInputError('ZeroDivisionError: float division by zero.');
      return x / y;
    case '//':
      if (y === 0) throw new ToolInputError('ZeroDivisionError: float floor division by zero.');
      return floatFloorDivide(x, y);
    case '%':
      if (y === 0) throw new ToolInputError('ZeroDivisionError: float modulo by zero.');
      return floatModulo(x, y);
    case '**':
      return floatPower(x, y);
  }
}

export function negate(value: PyNumber): PyNumber {
  return -value;
}

/** Python's `repr` of a number: integers in full, floats in the shortest form that reads back the same. */
export function formatNumber(value: PyNumber): string {
  if (typeof value === 'bigint') return value.toString();
  return floatRepr(value);
}

/** The value of a numeric literal: an integer literal is an int, one with `.` or an exponent is a float. */
export function parseNumberLiteral(text: string, limits: NumberLimits): PyNumber {
  if (/^[0-9]+$/.test(text)) {
    if (text.replace(/^0+/, '').length > limits.maxDigits) throw tooManyDigits(limits);
    return BigInt(text);
  }
  return Number(text);
}

function checkedInt(value: bigint, limits: NumberLimits): bigint {
  if (bitLength(value) > maxBits(limits) - 4 && (value < 0n ? -value : value) >= digitBound(limits.maxDigits))
    throw tooManyDigits(limits);
  return value;
}

/** 10 ** maxDigits, the smallest integer with one digit too many; computed once per limit. */
const digitBounds = new Map<number, bigint>();
function digitBound(maxDigits: number): bigint {
  let bound = digitBounds.get(maxDigits);
  if (bound === undefined) {
    bound = 10n ** BigInt(maxDigits);
    digitBounds.set(maxDigits, bound);
  }
  return bound;
}

function tooManyDigits(limits: NumberLimits): ToolInputError {
  return new ToolInputError(
    `The result would have more than ${limits.maxDigits} digits; this calculator stops there. Rewrite the expression with smaller numbers, or use floats (e.g. 2.0 ** 100000) for an approximation.`,
  );
}

/** Bits an integer of `maxDigits` decimal digits can need. */
function maxBits(limits: NumberLimits): number {
  return Math.ceil(limits.maxDigits * Math.log2(10));
}

function bitLength(value: bigint): number {
  if (value === 0n) return 0;
  return (value < 0n ? -value : value).toString(16).length * 4;
}

/** Python's float(int): exact when it can be, an OverflowError past the largest double. */
function toFloat(value: PyNumber): number {
  if (typeof value === 'number') return value;
  const converted = Number(value);
  if (!Number.isFinite(converted))
    throw new ToolInputError('OverflowError: int too large to convert to float.');
  return converted;
}

function intFloorDivide(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new ToolInputError('ZeroDivisionError: integer division or modulo by zero.');
  const quotient = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? quotient - 1n : quotient;
}

function intModulo(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new ToolInputError('ZeroDivisionError: integer division or modulo by zero.');
  const remainder = a % b;
  return remainder !== 0n && remainder < 0n !== b < 0n ? remainder + b : remainder;
}

const exactDoubleBound = 2n ** 53n;

/** int / int, correctly rounded like CPython's, however large the operands. */
function intTrueDivide(a: bigint, b: bigint): number {
  if (b === 0n) throw new ToolInputError('ZeroDivisionError: division by zero.');
  const negative = a < 0n !== b < 0n;
  const n = a < 0n ? -a : a;
  const d = b < 0n ? -b : b;
  if (n <= exactDoubleBound && d <= exactDoubleBound) return Number(a) / Number(b);
  const magnitude = roundedQuotient(n, d, 0);
  if (!Number.isFinite(magnitude))
    throw new ToolInputError('OverflowError: integer division result too large for a float.');
  return negative ? -magnitude : magnitude;
}

function intPower(base: bigint, exponent: bigint, limits: NumberLimits): PyNumber {
  if (exponent < 0n) return floatPower(toFloat(base), toFloat(exponent));
  if (exponent === 0n || base === 1n) return 1n;
  if (base === 0n) return 0n;
  if (base === -1n) return exponent % 2n === 0n ? 1n : -1n;
  // |base| >= 2: the result has at least (bits(base) - 1) * exponent bits; refuse before computing a giant.
  const bits = maxBits(limits);
  if (exponent > BigInt(bits) || (bitLength(base) - 4) * Number(exponent) > bits) throw tooManyDigits(limits);
  const estimate = bitLength(base) * Number(exponent);
  if (estimate > 4 * bits) throw tooManyDigits(limits);
  return checkedInt(base ** exponent, limits);
}

function isOddInteger(value: number): boolean {
  return Number.isInteger(value) && Math.abs(value % 2) === 1;
}

/** CPython's float_pow: its special cases, its errors, and complex results refused. */
function floatPower(base: number, exponent: number): number {
  if (exponent === 0) return 1;
  if (Number.isNaN(base)) return base;
  if (Number.isNaN(exponent)) return base === 1 ? 1 : exponent;
  if (!Number.isFinite(exponent)) {
    const magnitude = Math.abs(base);
    if (magnitude === 1) return 1;
    return exponent > 0 === magnitude > 1 ? Math.abs(exponent) : 0;
  }
  if (!Number.isFinite(base)) {
    const odd = isOddInteger(exponent);
    if (exponent > 0) return odd ? base : Math.abs(base);
    return odd ? (base > 0 ? 0 : -0) : 0;
  }
  if (base === 0) {
    if (exponent < 0)
      throw new ToolInputError('ZeroDivisionError: 0.0 cannot be raised to a negative power.');
    return isOddInteger(exponent) ? base : 0;
  }
  if (base === 1) return 1;
  let magnitude = base;
  let negativeResult = false;
  if (base < 0) {
    if (!Number.isInteger(exponent)) {
      throw new ToolInputError(
        'A negative number raised to a fractional power has a complex result, which this calculator does not compute.',
      );
    }
    magnitude = -base;
    negativeResult = isOddInteger(exponent);
  }
  // V8's ** and the C library's pow (which CPython calls) are both within an ulp; they can differ in the last digit.
  const result = magnitude ** exponent;
  if (!Number.isFinite(result))
    throw new ToolInputError("OverflowError: (34, 'Numerical result out of range').");
  return negativeResult ? -result : result;
}

/** CPython's float floor division (float_floor_div): floor of the exact quotient, rounded like divmod. */
function floatFloorDivide(x: number, y: number): number {
  let mod = x % y;
  let div = (x - mod) / y;
  if (mod !== 0) {
    if (y < 0 !== mod < 0) {
      mod += y;
      div -= 1;
    }
  }
  if (div !== 0) {
    let floorDiv = Math.floor(div);
    if (div - floorDiv > 0.5) floorDiv += 1;
    return floorDiv;
  }
  return x / y < 0 || Object.is(x / y, -0) ? -0 : 0;
}

/** CPython's float modulo: the remainder takes the sign of the divisor. */
function floatModulo(x: number, y: number): number {
  const mod = x % y;
  if (mod !== 0) return y < 0 !== mod < 0 ? mod + y : mod;
  return y < 0 ? -0 : 0;
}

/** Python's repr of a float: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
function floatRepr(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Number.POSITIVE_INFINITY) return 'inf';
  if (value === Number.NEGATIVE_INFINITY) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const sign = value < 0 ? '-' : '';
  // toExponential() without an argument gives the shortest digits that read back as the same double.
  const [mantissa = '', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  const pointAt = exponent + 1;
  if (pointAt <= -4 || pointAt > 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const exponentSign = exponent < 0 ? '-' : '+';
    return `${sign}${head}e${exponentSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (pointAt <= 0) return `${sign}0.${'0'.repeat(-pointAt)}${digits}`;
  if (pointAt >= digits.length) return `${sign}${digits}${'0'.repeat(pointAt - digits.length)}.0`;
  return `${sign}${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`;
}
