import { ConfigError, tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** tool() refuses at definition time what would otherwise be accepted silently and go wrong in a run. */

const base = { name: 't', description: 'A tool', input: z.object({ a: z.string() }), execute: () => 'ok' };

describe('tool() definition checks', () => {
  it.each([
    ['a string schema', z.string()],
    ['an array schema', z.array(z.string())],
    ['a union of objects', z.union([z.object({ a: z.string() }), z.object({ b: z.string() })])],
    ['a number', z.number()],
  ])('refuses an input that is not a zod object schema: %s', (_label, input) => {
    expect(() => tool({ ...base, input })).toThrowError(/input must be a zod object schema/);
  });

  it('accepts object schemas, strict and loose ones, and refined ones', () => {
    for (const input of [
      z.object({}),
      z.strictObject({ a: z.string() }),
      z.looseObject({ a: z.string() }),
      z.object({ a: z.string() }).refine(() => true),
    ])
      expect(tool({ ...base, input }).kind).toBe('tool');
  });

  it.each([1.5, -1, Number.NaN, '2'])('refuses maxRetries: %s (whole attempts only)', (retries) => {
    expect(() => tool({ ...base, maxRetries: retries as number })).toThrowError(
      /maxRetries must be an integer >= 0/,
    );
  });

  it.each([0])('refuses timeoutMs: %s (it would time out at once)', (timeoutMs) => {
    expect(() => tool({ ...base, timeoutMs })).toThrowError(ConfigError);
  });

  it('refuses a misspelled option, naming the closest one (secrets would leave the secret unprotected)', () => {
    expect(() => tool({ ...base, secrets: ['a'] } as never)).toThrowError(
      /no option "secrets" \(did you mean "secret"\?\)/,
    );
    expect(() => tool({ ...base, timeout: 10 } as never)).toThrowError(/did you mean "timeoutMs"/);
  });

  it('refuses secret names that are not non-empty strings', () => {
    expect(() => tool({ ...base, secret: [''] })).toThrowError(ConfigError);
    expect(() => tool({ ...base, secret: 'a' as never })).toThrowError(ConfigError);
  });
});
