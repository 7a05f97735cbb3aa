/**
 * Correct rounding of exact rational values to doubles, the way CPython's int/int division does it: one rounding,
 * to nearest with ties to even, subnormals included, for integers too large to convert to doubles first.
 */

/** The exact number of bits of a non-negative bigint (0 for 0). */
export function exactBitLength(value: bigint): number {
  if (value === 0n) return 0;
  const hex = value.toString(16);
  return (hex.length - 1) * 4 + (32 - Math.clz32(Number.parseInt(hex[0] as string, 16)));
}

/**
 * The double nearest to `numerator / denominator * 2**scale` (numerator >= 0, denominator > 0); Infinity when it
 * is beyond the largest double.
 */
export function roundedQuotient(numerator: bigint, denominator: bigint, scale: number): number {
  if (numerator === 0n) return 0;
  // e = floor(log2(numerator / denominator)).
  let e = exactBitLength(numerator) - exactBitLength(denominator);
  if (e >= 0 ? numerator < denominator << BigInt(e) : numerator << BigInt(-e) < denominator) e--;
  const binaryExponent = e + scale;
  if (binaryExponent > 1023) return Number.POSITIVE_INFINITY;
  // The unit in the last place of the result: 2**-52 relative for normal numbers, 2**-1074 for subnormals.
  const ulpExponent = Math.max(binaryExponent - 52, -1074);
  const shift = scale - ulpExponent;
  const a = shift >= 0 ? numerator << BigInt(shift) : numerator;
  const b = shift >= 0 ? denominator : denominator << BigInt(-shift);
  let quotient = a / b;
  const twiceRemainder = (a % b) * 2n;
  if (twiceRemainder > b || (twiceRemainder === b && (quotient & 1n) === 1n)) quotient += 1n;
  return scaleByPowerOfTwo(Number(quotient), ulpExponent);
}

/** x * 2**exponent in steps that stay normal, so only the last step can round (and it is exact here). */
export function scaleByPowerOfTwo(x: number, exponent: number): number {
  let result = x;
  let remaining = exponent;
  while (remaining > 1000) {
    result *= 2 ** 1000;
    remaining -= 1000;
  }
  while (remaining < -1000) {
    result *= 2 ** -1000;
    remaining += 1000;
  }
  return result * 2 ** remaining;
}
