import { PiiMasker, piiKinds } from 'troupe';
import { describe, expect, it } from 'vitest';
import { lookAlikes, positives } from './pii-samples.ts';

const masker = () => new PiiMasker({ kinds: new Set(piiKinds), defaultCountry: 'US' });

describe('PII detection', () => {
  for (const [kind, values] of Object.entries(positives)) {
    it(`masks every ${kind.toLowerCase()} format`, () => {
      const m = masker();
      for (const value of values) {
        const text = `Here: ${value}, thanks.`;
        const masked = m.mask(text);
        expect(masked, value).toMatch(new RegExp(`^Here: <${kind}_\\d+>, thanks\\.$`));
      }
    });
  }

  it('masks a bearer token but keeps the word', () => {
    expect(masker().mask('Authorization: Bearer abcDEF123456ghiJKL789mno')).toBe(
      'Authorization: Bearer <SECRET_1>',
    );
  });

  it('leaves look-alikes alone', () => {
    const m = masker();
    for (const text of lookAlikes) expect(m.mask(`see ${text} here`), text).toBe(`see ${text} here`);
  });

  it('takes an email address without the punctuation around it', () => {
    const m = masker();
    expect(m.mask('Mail: bob@example.com.')).toBe('Mail: <EMAIL_1>.');
    expect(m.mask('<bob@example.com>, mailto:bob@example.com')).toBe('<<EMAIL_1>>, mailto:<EMAIL_1>');
    expect(m.mask('(ann.lee@example.co.uk)')).toBe('(<EMAIL_2>)');
    expect(m.mask('user@localhost and a@b.c and x@@y.com')).toBe('user@localhost and a@b.c and x@@y.com');
  });

  it('without a default country finds only international phone numbers', () => {
    const m = new PiiMasker({ kinds: new Set(['phone']) });
    expect(m.mask('call (415) 555-2671')).toBe('call (415) 555-2671');
    expect(m.mask('call +1 415 555 2671')).toBe('call <PHONE_1>');
  });

  it('gives one value one placeholder and reveals placeholders it made', () => {
    const m = masker();
    const masked = m.mask('bob@example.com wrote to ann@example.com, then bob@example.com again');
    expect(masked).toBe('<EMAIL_1> wrote to <EMAIL_2>, then <EMAIL_1> again');
    expect(m.reveal(`${masked} <EMAIL_9>`)).toBe(
      'bob@example.com wrote to ann@example.com, then bob@example.com again <EMAIL_9>',
    );
  });

  it('counts what it masks, per kind', () => {
    const counts = {};
    masker().mask('bob@example.com, ann@example.com, 4111 1111 1111 1111', counts);
    expect(counts).toEqual({ email: 2, card: 1 });
  });

  it('masks only the kinds asked for', () => {
    const m = new PiiMasker({ kinds: new Set(['card']) });
    expect(m.mask('bob@example.com 4111 1111 1111 1111')).toBe('bob@example.com <CARD_1>');
  });
});
