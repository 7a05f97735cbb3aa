import { PiiMasker, piiKinds } from 'troupe';
import { describe, expect, it } from 'vitest';
import { disguised, disguisedLookAlikes, lookAlikes } from './pii-samples.ts';

const masker = () => new PiiMasker({ kinds: new Set(piiKinds), defaultCountry: 'US' });

describe('PII detection on a normalized view', () => {
  for (const { kind, text, value } of disguised) {
    it(`masks ${JSON.stringify(value)} in ${JSON.stringify(text)} as ${kind}`, () => {
      const m = masker();
      const start = text.indexOf(value);
      // Exactly the value, as written (invisible characters inside it included), is found.
      expect(m.find(text)).toContainEqual({ kind: kind.toLowerCase(), start, end: start + value.length });
      const masked = m.mask(text);
      expect(masked).not.toContain(value);
      // The original span is what was replaced: revealing the placeholders gives the text back, as written.
      expect(m.reveal(masked)).toBe(text);
    });
  }

  it('replaces only the value: the text around it stays as written', () => {
    const m = masker();
    expect(m.mask('1,Ann,4111111111111111,12/27')).toBe('1,Ann,<CARD_1>,12/27');
    expect(m.mask('[4111111111111111,5555555555554444]')).toBe('[<CARD_1>,<CARD_2>]');
    expect(m.mask('mail bоb@exаmple.com now')).toBe('mail <EMAIL_1> now');
    expect(m.mask('card ４１１１ １１１１ １１１１ １１１１ ok')).toBe('card <CARD_3> ok');
    expect(m.mask('a\u200bb 4111\u200b1111\u200b1111\u200b1111 c')).toBe('a\u200bb <CARD_4> c');
    expect(m.mask('иван@пример.рф.')).toBe('<EMAIL_2>.');
  });

  it('finds a value right after another number or value (the search goes on after each candidate)', () => {
    const m = masker();
    expect(m.mask('378282246310005 4111 1111 1111 1111')).toBe('<CARD_1> <CARD_2>');
    expect(m.mask('Order 1234567890 4111-1111-1111-1111;')).toBe('Order 1234567890 <CARD_3>;');
    expect(m.mask('FR14 2004 1010 0505 0001 3M02 606 and GB29 NWBK 6016 1331 9268 19')).toBe(
      '<IBAN_1> and <IBAN_2>',
    );
  });

  it('masks a PEM private key whose end line is missing (cut off), and not a header alone', () => {
    const key =
      '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj';
    expect(masker().mask(`here:\n${key}`)).toBe('here:\n<SECRET_1>');
    expect(masker().mask(`${key}\n\nThat was it.`)).toBe('<SECRET_1>\n\nThat was it.');
  });

  it('leaves look-alikes alone, disguised the same ways', () => {
    const m = masker();
    for (const text of [...lookAlikes, ...disguisedLookAlikes])
      expect(m.mask(`see ${text} here`), text).toBe(`see ${text} here`);
  });
});
