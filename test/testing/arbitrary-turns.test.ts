import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ModelError, tool } from '../../src/index.ts';
import { arbitraryModelTurns } from '../../src/testing/arbitrary-turns.ts';
import { formatScript } from '../../src/testing/format-script.ts';
import { arbitraryFromSchema, exampleFromSchema } from '../../src/testing/schema-values.ts';
import type { ScriptedTurn } from '../../src/testing/scripted-model.ts';

const search = tool({
  name: 'search',
  description: 'Searches',
  input: z.object({
    q: z.string().min(1).max(20),
    limit: z.number().int().min(1).max(5).optional(),
    mode: z.enum(['fast', 'deep']),
    tags: z.array(z.string()).max(2),
    owner: z.email().optional(),
  }),
  execute: () => 'found',
});

const output = z.object({ answer: z.string(), score: z.number().min(0).max(1) });

describe('arbitraryFromSchema and exampleFromSchema', () => {
  it("generate values the tool's own zod schema accepts", () => {
    for (const args of fc.sample(arbitraryFromSchema(search.parameters), { numRuns: 200, seed: 7 }))
      expect(search.input.safeParse(args).error).toBeUndefined();
    expect(search.input.safeParse(exampleFromSchema(search.parameters, 0)).success).toBe(true);
    expect(search.input.safeParse(exampleFromSchema(search.parameters, 1)).success).toBe(true);
    expect(exampleFromSchema(search.parameters, 0)).not.toEqual(exampleFromSchema(search.parameters, 1));
  });
});

describe('arbitraryModelTurns', () => {
  const scripts = fc.sample(arbitraryModelTurns({ tools: [search], output, maxTurns: 6 }), {
    numRuns: 300,
    seed: 1,
  });
  const turns = scripts.flat();
  const calls = turns.flatMap((turn) => turn.toolCalls ?? []);

  it('mixes valid calls, invalid calls, repeats, answers, refusals, truncations, errors, delays and empty answers', () => {
    expect(scripts.every((script) => script.length <= 6)).toBe(true);
    const valid = calls.filter((call) => call.name === 'search' && search.input.safeParse(call.args).success);
    expect(valid.length).toBeGreaterThan(50);
    expect(calls.some((call) => call.name === 'no_such_tool')).toBe(true);
    expect(calls.some((call) => typeof call.args === 'string')).toBe(true);
    expect(
      calls.some(
        (call) =>
          call.name === 'search' &&
          typeof call.args === 'object' &&
          !search.input.safeParse(call.args).success,
      ),
    ).toBe(true);
    expect(turns.some((turn) => turn.stopReason === 'refusal' && turn.refusal)).toBe(true);
    expect(turns.some((turn) => turn.stopReason === 'content_filter')).toBe(true);
    expect(turns.some((turn) => turn.stopReason === 'max_tokens')).toBe(true);
    const errors = turns.map((turn) => turn.error).filter((error) => error instanceof ModelError);
    expect(new Set(errors.map((error) => error.kind)).size).toBeGreaterThan(3);
    expect(turns.some((turn) => (turn.delayMs ?? 0) > 0)).toBe(true);
    expect(turns.some((turn) => turn.text === '' && !turn.toolCalls && !turn.stopReason)).toBe(true);
    const answers = turns.filter((turn) => turn.text && !turn.stopReason?.startsWith('max'));
    expect(answers.some((turn) => output.safeParse(safeJson(turn.text)).success)).toBe(true);
    expect(scripts.some(hasRepeat)).toBe(true);
  });

  it('leaves out the kinds weighted 0, and has no tool calls without tools', () => {
    const quiet = fc
      .sample(arbitraryModelTurns({ weights: { error: 0, refusal: 0 } }), { numRuns: 100, seed: 2 })
      .flat();
    expect(quiet.some((turn) => turn.error !== undefined || turn.stopReason === 'refusal')).toBe(false);
    expect(quiet.flatMap((turn) => turn.toolCalls ?? []).every((call) => call.name === 'no_such_tool')).toBe(
      true,
    );
  });

  it('formats a script readably', () => {
    const script: ScriptedTurn[] = [
      { toolCalls: [{ name: 'search', args: { q: 'x' } }], stopReason: 'tool_use', delayMs: 2 },
      { error: new ModelError('rate_limited', 'slow down') },
      { text: '' },
      { text: 'Done.', stopReason: 'end_turn' },
    ];
    expect(formatScript(script)).toBe(
      [
        '  1. calls search({"q":"x"})  [tool_use, after 2 ms]',
        '  2. fails: ModelError rate_limited: slow down',
        '  3. answers nothing',
        '  4. says "Done."  [end_turn]',
      ].join('\n'),
    );
  });
});

function safeJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return undefined;
  }
}

function hasRepeat(script: ScriptedTurn[]): boolean {
  const seen = new Set<string>();
  for (const turn of script) {
    if (!turn.toolCalls?.length) continue;
    const key = JSON.stringify(turn.toolCalls);
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}

describe('arbitraryFromSchema on patterns', () => {
  it('generates strings matching a pattern, and plain strings for a pattern it cannot use', () => {
    for (const value of fc.sample(arbitraryFromSchema({ type: 'string', pattern: '^[A-Z]-\\d{2}$' }), 50))
      expect(value).toMatch(/^[A-Z]-\d{2}$/);
    for (const value of fc.sample(arbitraryFromSchema({ type: 'string', pattern: '(unclosed' }), 10))
      expect(typeof value).toBe('string');
  });
});
