import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decodeOutput } from '../../src/agent/decode-output.ts';

describe('decodeOutput', () => {
  it('tells the model what does not match as zod words it, shallowest first, with each place', () => {
    const schema = z.object({
      name: z.string(),
      'first-line': z.string(),
      items: z.array(z.object({ count: z.number() })),
    });
    const value = { name: 3, 'first-line': 1, items: [{ count: 'x' }] };
    const decoded = decodeOutput(JSON.stringify(value), schema);
    const checked = schema.safeParse(value);
    if (checked.success) throw new Error('the value was meant not to match');
    expect(decoded).toEqual({
      ok: false,
      error: `The JSON does not match the schema:\n${z.prettifyError(checked.error)}`,
    });
    expect(decoded.ok ? '' : decoded.error).toContain('→ at items[0].count');
    expect(decoded.ok ? '' : decoded.error).toContain('→ at ["first-line"]');
  });

  it('a value that matches decodes', () => {
    expect(decodeOutput('```json\n{"a":1}\n```', z.object({ a: z.number() }))).toEqual({
      ok: true,
      value: { a: 1 },
    });
  });
});
