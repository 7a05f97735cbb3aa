import { PiiMasker, piiKinds } from 'troupe';
import { describe, expect, it } from 'vitest';

const masker = () => new PiiMasker({ kinds: new Set(piiKinds), defaultCountry: 'US' });

/** Values of every kind, in the formats people and systems write them. */
const positives: Record<string, string[]> = {
  EMAIL: [
    'bob@example.com',
    'first.last+tag@sub.example.co.uk',
    'Bob_O-Neil@mail-server.io',
    'x@y.museum',
    'UPPER.CASE@EXAMPLE.ORG',
    'a1_b2%c3@d4-e5.f6.dev',
  ],
  PHONE: [
    '+1 415-555-2671',
    '(415) 555-2671',
    '415.555.2671',
    '+1 (212) 555-0199',
    '+44 20 7946 0958',
    '+49 30 901820',
    '+33 6 12 34 56 78',
    '+81 3-1234-5678',
    '+61 2 9876 5432',
  ],
  CARD: [
    '4111 1111 1111 1111',
    '4111-1111-1111-1111',
    '5555555555554444',
    '2223 0031 2200 3222',
    '378282246310005',
    '3782 822463 10005',
    '6011111111111117',
    '3530111333300000',
    '6200000000000005',
  ],
  IBAN: [
    'DE89 3704 0044 0532 0130 00',
    'DE89370400440532013000',
    'GB29NWBK60161331926819',
    'GB29 NWBK 6016 1331 9268 19',
    'FR14 2004 1010 0505 0001 3M02 606',
    'NL91ABNA0417164300',
    'ES9121000418450200051332',
    'CH9300762011623852957',
  ],
  SECRET: [
    'sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678',
    'sk-svcacct-AbC123dEf456GhI789jKl012MnO345pQr678',
    'sk-ant-api03-AbC123dEf456GhI789jKl012MnO345pQr678-xyz_ABC',
    'sk-ant-admin01-AbC123dEf456GhI789jKl012MnO345pQr678',
    'sk-AbC123dEf456GhI789jKl012MnO345pQr678StU901',
    'AKIAIOSFODNN7EXAMPLE',
    'ASIAY34FZKBOKMUTVV7A',
    'ghp_1234567890abcdefghijklmnopqrstuvwxyzAB',
    'gho_16C7e42F292c6912E7710c838347Ae178B4a',
    'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV',
    'glpat-AbC123dEf456GhI789jKl0',
    'AIzaSyD-1234567890abcdefghijklmnopqrstu',
    'xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
    'xoxp-1234567890-1234567890-1234567890123-abcdef1234567890abcdef1234567890',
    'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
    'rk_test_4eC39HqLyjWDarjtT1zdp7dc',
    'hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
    'npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  ],
};

/** Things that look like personal data or secrets and are not. */
const lookAlikes = [
  'Order 1234567890',
  'order #20240517-0042',
  'invoice INV-2024-000123',
  '2024-05-17',
  '17/05/2024 12:45:30',
  'v1.2.3',
  'version 10.15.7',
  'node 24.11.0',
  '4111111111111112',
  '1234 5678 9012 3456',
  '0000 0000 0000 0001',
  'DE89 3704 0044 0532 0130 01',
  'XX89370400440532013000',
  '123e4567-e89b-12d3-a456-426614174000',
  'da39a3ee5e6b4b0d3255bfef95601890afd80709',
  'commit 547ae69',
  '$1,234,567.89',
  'price 12,345,678.00 USD',
  '€ 1.234,56',
  'sk-learn is a library',
  'the sk-ant- prefix',
  'risk-management and task-1234',
  'Call 555-0100',
  '192.168.1.254',
  'ISBN 978-3-16-148410-0',
  'npm i @scope/pkg@1.2.3',
  'Bearer token',
  'tracking 1Z999AA10123456784',
  'timestamp 1700000000000',
  'pk_live_4eC39HqLyjWDarjtT1zdp7dc is publishable',
  'AKIA is a prefix',
];

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
