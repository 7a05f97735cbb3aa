import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { ToolInputError } from 'troupe';
import { calculator, evaluateArithmetic } from 'troupe/tools';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** Answers of CPython 3.11 (`repr(eval(expression))`), checked by hand for the rules each row names. */
const pythonTable: readonly [expression: string, python: string][] = [
  // precedence and associativity
  ['1+2*3', '7'],
  ['(1+2)*3', '9'],
  ['100-3-2', '95'],
  ['2*3//4', '1'],
  ['8//3*3+8%3', '8'],
  ['2**3**2', '512'],
  ['(2**3)**2', '64'],
  ['-2**2', '-4'],
  ['(-2)**2', '4'],
  ['2**-1', '0.5'],
  ['-2**-2', '-0.25'],
  ['2**-2**2', '0.0625'],
  ['2 ** 0.5 ** 2', '1.189207115002721'],
  ['--2', '2'],
  ['+-+2', '-2'],
  ['3*-2', '-6'],
  ['2**10//3**2', '113'],
  // true division, floor division and modulo with negatives, on ints and floats
  ['7/2', '3.5'],
  ['-7//2', '-4'],
  ['7//-2', '-4'],
  ['-7//-2', '3'],
  ['-7%3', '2'],
  ['7%-3', '-2'],
  ['-7%-3', '-1'],
  ['-7.5//2', '-4.0'],
  ['7.5%-2', '-0.5'],
  ['-7%2.5', '0.5'],
  ['5 % 0.5', '0.0'],
  ['-5 // 0.3', '-17.0'],
  ['1.0//0.1', '9.0'],
  ['-1.0//0.1', '-10.0'],
  ['1%0.1', '0.09999999999999995'],
  ['-6 % 3', '0'],
  ['-6.0 % 3', '0.0'],
  ['6.0 % -3', '-0.0'],
  ['0/-5', '-0.0'],
  // exact integers and where Python turns to floats
  ['2**100', '1267650600228229401496703205376'],
  ['10**20', '100000000000000000000'],
  ['10.0**20', '1e+20'],
  ['123456789012345678901234567890/3', '4.115226300411523e+28'],
  ['10**400//10**399', '10'],
  ['10**400/10**399', '10.0'],
  ['10**30/7', '1.4285714285714285e+29'],
  ['-(10**30)//7', '-142857142857142857142857142858'],
  ['(-10)**31 % 7', '4'],
  ['(-8)**3', '-512'],
  ['(-2)**-3', '-0.125'],
  ['2**62*4', '18446744073709551616'],
  ['12345678901234567890*1.0', '1.2345678901234567e+19'],
  // int / int is correctly rounded, subnormals and the edge of overflow included
  ['1/10**320', '1e-320'],
  ['3/10**323', '3e-323'],
  ['7/10**324', '5e-324'],
  ['(10**400+1)/10**100', '1e+300'],
  ['2**1074/2**2148', '5e-324'],
  ['(2**53+1)/1', '9007199254740992.0'],
  ['(2**54+3)/2', '9007199254740994.0'],
  ['-(10**30)/3', '-3.333333333333333e+29'],
  ['(2**1024-2**971)/1', '1.7976931348623157e+308'],
  ['2**1023*2.0', 'inf'],
  ['1e300*1e300', 'inf'],
  ['0**0', '1'],
  ['0.0**0', '1.0'],
  // float formatting (repr)
  ['0.1+0.2', '0.30000000000000004'],
  ['1/3', '0.3333333333333333'],
  ['2**0.5', '1.4142135623730951'],
  ['1e16', '1e+16'],
  ['1e15', '1000000000000000.0'],
  ['0.0001', '0.0001'],
  ['0.00001', '1e-05'],
  ['1.5e3', '1500.0'],
  ['.5', '0.5'],
  ['5.', '5.0'],
  ['-0.0', '-0.0'],
  ['-0', '0'],
  ['1e-320/2', '5e-321'],
  ['1e999', 'inf'],
  // Python's literal forms
  ['1_000_000', '1000000'],
  ['1_0.5_0', '10.5'],
  ['00', '0'],
  ['00.5', '0.5'],
  ['01e3', '1000.0'],
  ['1e1_0', '10000000000.0'],
  ['.5_5', '0.55'],
  // the Unicode operator signs
  ['7 × 3 ÷ 2 − 1', '9.5'],
];

/** Expressions CPython rejects with an exception (ZeroDivisionError, OverflowError) or answers with a complex. */
const pythonErrors: readonly [expression: string, message: RegExp][] = [
  ['1/0', /ZeroDivisionError: division by zero/],
  ['1//0', /ZeroDivisionError: integer division or modulo by zero/],
  ['1%0', /ZeroDivisionError: integer division or modulo by zero/],
  ['1.0/0', /ZeroDivisionError: float division by zero/],
  ['5.5//0.0', /ZeroDivisionError: float floor division by zero/],
  ['5.5%0', /ZeroDivisionError: float modulo by zero/],
  ['0**-1', /0\.0 cannot be raised to a negative power/],
  ['10.0**400', /OverflowError/],
  ['10**400*1.0', /OverflowError: int too large to convert to float/],
  ['10**400/3', /OverflowError: integer division result too large for a float/],
  ['(2**1024-2**970)/1', /OverflowError: integer division result too large for a float/],
  ['(-8)**(1/3)', /complex/],
];

interface PythonCase {
  expression: string;
  python: string;
}
const randomPythonCases = JSON.parse(
  readFileSync(new URL('../../fixtures/calculator/python-cases.json', import.meta.url), 'utf8'),
) as PythonCase[];

describe('evaluateArithmetic answers what Python answers', () => {
  it.each(pythonTable)('%s = %s', (expression, python) => {
    expect(evaluateArithmetic(expression)).toBe(python);
  });

  it.each(pythonErrors)('%s is an error result', (expression, message) => {
    expect(() => evaluateArithmetic(expression)).toThrow(ToolInputError);
    expect(() => evaluateArithmetic(expression)).toThrow(message);
  });

  it('on 400 random expressions evaluated by CPython (test/fixtures/calculator/generate.py)', () => {
    expect(randomPythonCases).toHaveLength(400);
    const mismatches: string[] = [];
    for (const { expression, python } of randomPythonCases) {
      let answer: string;
      try {
        answer = evaluateArithmetic(expression);
      } catch (error) {
        if (!(error instanceof ToolInputError)) throw error;
        answer = 'error';
      }
      if (answer !== python) mismatches.push(`${expression}: python ${python}, calculator ${answer}`);
    }
    expect(mismatches).toEqual([]);
  });
});

/** A syntax tree of integers, with what Python computes for it, derived here independently of the calculator. */
interface IntTree {
  /** Fully parenthesized. */
  full: string;
  /** Parenthesized only where Python's precedence needs it. */
  minimal: string;
  /** Precedence level of the tree's top operator, for `minimal`: 1 sum, 2 term, 3 unary, 4 power, 5 atom. */
  level: number;
  value: bigint | 'error';
}

const floorDiv = (a: bigint, b: bigint): bigint => {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
};

const intTree: fc.Memo<IntTree> = fc.memo((depth) => {
  const leaf = fc
    .bigInt({ min: 0n, max: 10n ** 12n })
    .map((n): IntTree => ({ full: `${n}`, minimal: `${n}`, level: 5, value: n }));
  if (depth <= 1) return leaf;
  const binary = fc
    .tuple(fc.constantFrom('+', '-', '*', '//', '%'), intTree(depth - 1), intTree(depth - 1))
    .map(([operator, left, right]): IntTree => {
      const level = operator === '+' || operator === '-' ? 1 : 2;
      // Left-associative: the left side may be at the same level, the right side must bind tighter.
      const l = left.level >= level ? left.minimal : `(${left.minimal})`;
      const r = right.level > level ? right.minimal : `(${right.minimal})`;
      let value: bigint | 'error' = 'error';
      if (left.value !== 'error' && right.value !== 'error') {
        const a = left.value;
        const b = right.value;
        if (operator === '+') value = a + b;
        else if (operator === '-') value = a - b;
        else if (operator === '*') value = a * b;
        else if (b !== 0n) value = operator === '//' ? floorDiv(a, b) : a - b * floorDiv(a, b);
      }
      return {
        full: `(${left.full} ${operator} ${right.full})`,
        minimal: `${l} ${operator} ${r}`,
        level,
        value,
      };
    });
  const power = fc
    .tuple(intTree(depth - 1), fc.integer({ min: 0, max: 3 }))
    .map(([base, exponent]): IntTree => {
      const b = base.level >= 5 ? base.minimal : `(${base.minimal})`;
      return {
        full: `(${base.full} ** ${exponent})`,
        minimal: `${b} ** ${exponent}`,
        level: 4,
        value: base.value === 'error' ? 'error' : base.value ** BigInt(exponent),
      };
    });
  const negation = intTree(depth - 1).map(
    (operand): IntTree => ({
      full: `(-${operand.full})`,
      minimal: `-${operand.level >= 3 ? operand.minimal : `(${operand.minimal})`}`,
      level: 3,
      value: operand.value === 'error' ? 'error' : -operand.value,
    }),
  );
  return fc.oneof({ depthSize: 'small' }, leaf, binary, power, negation);
});

function outcome(expression: string): string {
  try {
    return evaluateArithmetic(expression);
  } catch (error) {
    if (error instanceof ToolInputError) return 'error';
    throw error;
  }
}

/** What a calculator answer looks like: an integer, a float repr, inf or nan. */
const numberAnswer = /^-?(?:[0-9]+|[0-9]+\.[0-9]+|[0-9](?:\.[0-9]+)?e[+-][0-9]{2,3}|inf|nan)$/;

describe('fuzz', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('random integer trees: minimal and full parentheses both give the independently computed value', () => {
    let cases = 0;
    fc.assert(
      fc.property(intTree(5), (tree) => {
        cases++;
        const expected = tree.value === 'error' ? 'error' : tree.value.toString();
        expect(outcome(tree.minimal)).toBe(expected);
        expect(outcome(tree.full)).toBe(expected);
      }),
      { numRuns: 2000, seed: 7 },
    );
    expect(cases).toBe(2000);
  });

  it('random strings: an answer that is a number or an error result, nothing else, and no escape', () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    const globalsBefore = Object.getOwnPropertyNames(globalThis).sort();
    const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    const alphabet = fc.constantFrom(
      ...'0123456789.eE+-*/%()×÷− \t\n^_xabcdefghijklmnopqrstuvwxyz[]{}\'"`$;,=!?&|<>\\:'.split(''),
    );
    let cases = 0;
    let answers = 0;
    let errors = 0;
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: alphabet, maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 40 })),
        (source) => {
          cases++;
          try {
            const answer = evaluateArithmetic(source);
            expect(answer).toMatch(numberAnswer);
            answers++;
          } catch (error) {
            expect(error).toBeInstanceOf(ToolInputError);
            errors++;
          }
        },
      ),
      { numRuns: 20_000, seed: 11 },
    );
    console.log(
      `calculator fuzz: ${cases} random strings, ${answers} answers, ${errors} error results, 0 escapes`,
    );
    expect(cases).toBe(20_000);
    expect(answers + errors).toBe(cases);
    expect(answers).toBeGreaterThan(100);
    expect(exit).not.toHaveBeenCalled();
    expect(Object.getOwnPropertyNames(globalThis).sort()).toEqual(globalsBefore);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
  });
});

describe('injection and resource-exhaustion payloads', () => {
  const payloads: readonly string[] = [
    'constructor',
    "constructor.constructor('return process')()",
    '__proto__',
    '({}).__proto__',
    'process.exit()',
    'process.exit(1)',
    'this',
    'globalThis',
    'require("fs")',
    'import("fs")',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the payload is a template literal as text.
    '`${1+1}`',
    '"1"+1',
    "'1'+1",
    '1;process.exit()',
    '1,2',
    'x=1',
    '[1]+[2]',
    'Math.PI',
    'eval("1")',
    'Function("return 1")()',
    '1 + 1 // comment',
    '1 /* c */ + 1',
    '0x10',
    '007', // Python: leading zeros in decimal integer literals are not permitted
    '0_7',
    '1__000',
    '1_',
    '_1',
    '1n',
    'Infinity',
    'NaN',
    '２+２', // fullwidth digits
    '1\u200b+1', // zero-width space
    '1\u00a0+1', // no-break space
    '١+١', // Arabic-Indic digits
    '1 ⁄ 2', // fraction slash
    '\u202e1+1', // right-to-left override
    '1 + 2 ^ 3',
    '2 ** ** 3',
    '()',
    '',
    '   ',
    ')(',
    '1e',
    '1.2.3',
    '1e+',
    '..5',
    '(1',
    '1)',
    '\u0000',
    '\ud800',
  ];

  it.each(payloads.map((payload) => [JSON.stringify(payload), payload]))('%s is refused', (_, payload) => {
    expect(() => evaluateArithmetic(payload)).toThrow(ToolInputError);
  });

  it('bounds every evaluation: towers, huge results, long inputs and deep nesting are error results', () => {
    const bounded: readonly [string, RegExp][] = [
      ['9**9**9**9', /more than 10000 digits/],
      ['9**9**9', /more than 10000 digits/],
      ['2**100000', /more than 10000 digits/],
      ['(10**5000)*(10**5000)*10', /more than 10000 digits/],
      ['10**9999*10**9999', /more than 10000 digits/],
      ['9'.repeat(10_001), /at most 10000 are accepted/],
      [`${'('.repeat(10_000)}1${')'.repeat(10_000)}`, /at most 10000 are accepted/],
      [`${'('.repeat(4_000)}1${')'.repeat(4_000)}`, /nested more than 100 levels/],
      [`${'-'.repeat(5_000)}1`, /nested more than 100 levels/],
      [`${'2**'.repeat(3_000)}2`, /nested more than 100 levels/],
    ];
    for (const [expression, message] of bounded) {
      expect(() => evaluateArithmetic(expression), expression.slice(0, 40)).toThrow(message);
    }
    const roomy = { maxLength: 20_000, maxDigits: 10_000, maxDepth: 100 };
    expect(() => evaluateArithmetic(`1${'0'.repeat(10_000)}`, roomy)).toThrow(/more than 10000 digits/);
    expect(() => evaluateArithmetic(`${'9'.repeat(10_000)}+1`, roomy)).toThrow(/more than 10000 digits/);
    expect(evaluateArithmetic(`${'9'.repeat(10_000)}-1`, roomy)).toBe(`${'9'.repeat(9_999)}8`);
    // Large but allowed: exact, not refused.
    expect(evaluateArithmetic('2**33000').length).toBe(9934);
    expect(evaluateArithmetic('1**(10**9999)')).toBe('1');
    expect(evaluateArithmetic('(-1)**(10**9999+1)')).toBe('-1');
    expect(evaluateArithmetic('2**-(10**300)')).toBe('0.0');
    expect(() => evaluateArithmetic('2.0**-(10**400)')).toThrow(/int too large to convert to float/);
    // A long left-associative chain is evaluated in a loop, not by recursion.
    expect(evaluateArithmetic(Array.from({ length: 4_000 }, () => '1').join('+'))).toBe('4000');
  });

  it('the tool reports a refused expression as an error result with the reason, without retries', async () => {
    const calc = calculator();
    expect(calc.maxRetries).toBe(0);
    expect(() => calc.execute({ expression: '1/0' }, undefined as never)).toThrow(/ZeroDivisionError/);
    expect(await calc.execute({ expression: '6 * 7' }, undefined as never)).toBe('42');
  });
});
