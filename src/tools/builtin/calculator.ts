import { ConfigError } from '../../core/errors.ts';
import { checkOptionObject } from '../../core/options.ts';
import { zod } from '../../core/zod.ts';
import { type Tool, tool } from '../tool.ts';
import { type ArithmeticNode, parseArithmetic } from './arithmetic-expression.ts';
import {
  applyBinary,
  formatNumber,
  type NumberLimits,
  negate,
  type PyNumber,
  parseNumberLiteral,
} from './python-number.ts';

export interface CalculatorOptions {
  /** The tool's name. Default `calculator`. */
  name?: string | undefined;
  /** Longest accepted expression, in characters. Default 10,000. */
  maxLength?: number | undefined;
  /** Most decimal digits of an integer, in the input or any intermediate result. Default 10,000. */
  maxDigits?: number | undefined;
  /** Deepest nesting of parentheses, signs and powers. Default 100. */
  maxDepth?: number | undefined;
}

/** The bounds an evaluation runs under; see CalculatorOptions. */
export interface CalculatorLimits {
  maxLength: number;
  maxDigits: number;
  maxDepth: number;
}

export const defaultCalculatorLimits: CalculatorLimits = Object.freeze({
  maxLength: 10_000,
  maxDigits: 10_000,
  maxDepth: 100,
});

/**
 * Evaluates an arithmetic expression exactly as Python 3 would and returns Python's repr of the value: `2**100` is
 * `1267650600228229401496703205376`, `7 / 2` is `3.5`, `-7 // 2` is `-4`, `-7 % 3` is `2`, `-2**2` is `-4`.
 * The expression is read by a small parser that knows numbers, `+ - * / // % **` (and `× ÷ −`) and parentheses,
 * nothing else: no names, calls or strings, so it cannot run code. Every evaluation is bounded by `limits`: an
 * expression too long or too deep, an integer with too many digits, a division by zero or a float overflow throws a
 * ToolInputError saying why.
 */
export function evaluateArithmetic(
  expression: string,
  limits: CalculatorLimits = defaultCalculatorLimits,
): string {
  const tree = parseArithmetic(expression, limits);
  return formatNumber(evaluateNode(tree, limits));
}

/**
 * A chain of left-associative operators (1 + 2 + 3 + ...) is a tree as deep as it is long: it is walked in a loop,
 * so only nesting that the parser bounds (parentheses, signs, powers, right operands) costs stack.
 */
function evaluateNode(node: ArithmeticNode, limits: NumberLimits): PyNumber {
  const chain: Extract<ArithmeticNode, { kind: 'binary' }>[] = [];
  let bottom = node;
  while (bottom.kind === 'binary' && bottom.operator !== '**') {
    chain.push(bottom);
    bottom = bottom.left;
  }
  let value: PyNumber;
  if (bottom.kind === 'number') value = parseNumberLiteral(bottom.text, limits);
  else if (bottom.kind === 'unary') {
    const operand = evaluateNode(bottom.operand, limits);
    value = bottom.operator === '-' ? negate(operand) : operand;
  } else
    value = applyBinary(
      bottom.operator,
      evaluateNode(bottom.left, limits),
      evaluateNode(bottom.right, limits),
      limits,
    );
  for (let index = chain.length - 1; index >= 0; index--) {
    const link = chain[index] as Extract<ArithmeticNode, { kind: 'binary' }>;
    value = applyBinary(link.operator, value, evaluateNode(link.right, limits), limits);
  }
  return value;
}

const calculatorOptionKeys: readonly string[] = ['name', 'maxLength', 'maxDigits', 'maxDepth'];

/**
 * A tool that evaluates arithmetic the way Python does (see evaluateArithmetic): exact integers of any size up to
 * `maxDigits`, floats printed in Python's shortest form. A bad or impossible expression comes back to the model as
 * an error result saying what is wrong, and the tool stays available.
 */
export function calculator(options: CalculatorOptions = {}): Tool<{ expression: string }, string> {
  checkOptionObject(options as unknown, calculatorOptionKeys, 'calculator(): options');
  const limits: CalculatorLimits = {
    maxLength: positiveInteger(options.maxLength, defaultCalculatorLimits.maxLength, 'maxLength'),
    maxDigits: positiveInteger(options.maxDigits, defaultCalculatorLimits.maxDigits, 'maxDigits'),
    maxDepth: positiveInteger(options.maxDepth, defaultCalculatorLimits.maxDepth, 'maxDepth'),
  };
  const z = zod();
  const input = z.object({
    expression: z.string().describe('The expression, e.g. "(1.5 + 2) * 3 ** 2 // 4"'),
  });
  return tool<typeof input, string>({
    name: options.name ?? 'calculator',
    description:
      'Evaluates an arithmetic expression with Python 3 semantics and returns the value. Numbers (integers are exact at any size, floats like 1.5 or 2e-3), + - * / (true division), // (floor division), % (modulo with the sign of the divisor), ** (power, right-associative: -2**2 is -4) and parentheses; × ÷ − are accepted too. No variables or functions.',
    input,
    maxRetries: 0,
    execute: ({ expression }) => evaluateArithmetic(expression, limits),
  });
}

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new ConfigError(`calculator(): ${name} must be a positive integer.`);
  return value;
}
