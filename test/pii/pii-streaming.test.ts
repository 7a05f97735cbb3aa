import { type PiiKind, PiiMasker, piiKinds } from 'troupe';
import { describe, expect, it } from 'vitest';
import type { EventDelivery } from '../../src/core/event-bus.ts';
import type { RunEventData, RunEventType } from '../../src/core/events.ts';
import { maskingEventFilter } from '../../src/pii/event-masking.ts';
import { disguised, disguisedLookAlikes, lookAlikes, positives } from './pii-samples.ts';

interface Delivered {
  type: RunEventType;
  data: unknown;
}

const pem = [
  '-----BEGIN RSA PRIVATE KEY-----\n',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n',
  'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n',
  'LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n',
  '-----END RSA PRIVATE KEY-----\n',
];
const pemBody = pem.slice(1, -1).map((line) => line.trim());

/** The deltas as listeners get them through the masking filter, the stream ended by another event. */
function streamed(
  pieces: readonly string[],
  options: { kinds?: readonly PiiKind[]; defaultCountry?: string } = {},
): { deltas: string[]; events: Delivered[]; masker: PiiMasker } {
  const masker = new PiiMasker({
    kinds: new Set(options.kinds ?? piiKinds),
    defaultCountry: options.defaultCountry,
  });
  const filter = maskingEventFilter(masker);
  const events: Delivered[] = [];
  const deliver: EventDelivery = (_agent, type, data) => events.push({ type, data });
  const deltas: string[] = [];
  const before = (count: number) => {
    for (const event of events.slice(count))
      if (event.type === 'delta') deltas.push((event.data as RunEventData['delta']).content);
  };
  for (const piece of pieces) {
    const count = events.length;
    filter('a', 'delta', { content: piece }, undefined, deliver);
    before(count);
  }
  const count = events.length;
  filter('a', 'phase', { phase: 'completed', state: 'done', step: 1, retryCount: 0 }, undefined, deliver);
  before(count);
  return { deltas, events, masker };
}

/** The whole text masked at once, by a masker of its own: what the stream must add up to. */
function maskedWhole(pieces: readonly string[], defaultCountry?: string): string {
  return new PiiMasker({ kinds: new Set(piiKinds), defaultCountry }).mask(pieces.join(''));
}

describe('PII masking of values split across deltas', () => {
  const splits: [string, string[], string][] = [
    ['a card in 8-digit groups', ['card 41111111 ', '11111111 ok'], '41111111'],
    ['a card in 7- and 9-digit groups', ['card 4111111 ', '111111111 ok'], '4111111'],
    ['a lowercase IBAN', ['iban de89 ', '3704 0044 0532 0130 00 ok'], '3704 0044 0532 0130 00'],
    ['an IBAN in 5-character groups', ['iban DE893 ', '70400 44053 20130 00 ok'], '70400 44053 20130 00'],
    [
      'a Bearer token after a newline',
      ['Authorization: Bearer\n', 'abcDEF123456ghiJKL789mno\n'],
      'abcDEF123456',
    ],
    [
      'a Bearer token after two spaces',
      ['Authorization: Bearer  ', 'abcDEF123456ghiJKL789mno ok'],
      'abcDEF123456',
    ],
    [
      'a Bearer token whose word is split',
      ['Authorization: Bea', 'rer ', 'abcDEF123456ghiJKL789mno ok'],
      'abcDEF123456',
    ],
  ];
  for (const [name, pieces, secret] of splits) {
    it(`masks ${name}`, () => {
      const { deltas } = streamed(pieces);
      const text = deltas.join('');
      expect(text).not.toContain(secret);
      expect(text).toBe(maskedWhole(pieces));
      expect(text).toMatch(/<(CARD|IBAN|SECRET)_1>/);
    });
  }

  it('masks a PEM private key arriving line by line, and releases the text around it', () => {
    const pieces = ['Here is the key:\n', ...pem, 'Keep it safe.'];
    const { deltas } = streamed(pieces);
    const text = deltas.join('');
    for (const line of pemBody) expect(text).not.toContain(line.slice(0, 24));
    expect(text).toBe('Here is the key:\n<SECRET_1>\nKeep it safe.');
    // The text before the key went out with the first delta, not held for the key.
    expect(deltas[0]).toBe('Here is the key:\n');
  });

  it('masks a PEM private key cut off before its end line (the stream ends)', () => {
    const { deltas } = streamed(pem.slice(0, -1));
    const text = deltas.join('');
    for (const line of pemBody) expect(text).not.toContain(line.slice(0, 24));
    expect(text).toBe('<SECRET_1>\n');
  });

  it('masks a PEM private key in streamed tool-call arguments (JSON, escaped line breaks), line by line', () => {
    const masker = new PiiMasker({ kinds: new Set(piiKinds) });
    const filter = maskingEventFilter(masker);
    const shown: string[] = [];
    const deliver: EventDelivery = (_agent, type, data) => {
      if (type === 'tool_call_delta') shown.push((data as RunEventData['tool_call_delta']).argsDelta);
    };
    const pieces = ['{"path":"id_rsa","key":"', ...pem.map((line) => line.replace('\n', '\\n')), '"}'];
    filter(
      'a',
      'tool_call_delta',
      { index: 0, callId: 'c1', name: 'save', argsDelta: '' },
      undefined,
      deliver,
    );
    for (const piece of pieces.slice(0, -2)) {
      filter('a', 'tool_call_delta', { index: 0, argsDelta: piece }, undefined, deliver);
      // Nothing of the key goes out while its end line has not come.
      for (const line of pemBody) expect(shown.join('')).not.toContain(line.slice(0, 24));
    }
    for (const piece of pieces.slice(-2))
      filter('a', 'tool_call_delta', { index: 0, argsDelta: piece }, undefined, deliver);
    filter('a', 'phase', { phase: 'completed', state: 'done', step: 1, retryCount: 0 }, undefined, deliver);
    expect(shown.join('')).toBe('{"path":"id_rsa","key":"<SECRET_1>\\n"}');
  });

  it('masks every value, plain or disguised, split in two at every place, as the whole text is masked', () => {
    const values = [...Object.values(positives).flat(), ...disguised.map((sample) => sample.value)];
    for (const value of values) {
      const whole = `Note: ${value} (end)`;
      for (let at = 1; at < whole.length; at++) {
        const pieces = [whole.slice(0, at), whole.slice(at)];
        const text = streamed(pieces, { defaultCountry: 'US' }).deltas.join('');
        expect(text, `${JSON.stringify(pieces)}`).not.toContain(value);
        expect(text, `${JSON.stringify(pieces)}`).toBe(maskedWhole(pieces, 'US'));
      }
    }
  });

  it('streams mixed text split at random places exactly as the whole text is masked', () => {
    const parts = [
      ...Object.values(positives).flat(),
      ...disguised.map((sample) => sample.text),
      ...lookAlikes,
      ...disguisedLookAlikes,
      'Bearer\n\nabcDEF123456ghiJKL789mno',
      pem.join(''),
    ];
    const separators = [' ', ', ', '\n', ' | ', ';', '"', ' and '];
    // A fixed linear congruential sequence: the same "random" texts and splits on every run.
    let seed = 7;
    const next = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * below);
    };
    for (let round = 0; round < 150; round++) {
      let whole = '';
      for (let k = 0; k < 6; k++)
        whole += `${parts[next(parts.length)]}${separators[next(separators.length)]}`;
      const pieces: string[] = [];
      for (let at = 0; at < whole.length; ) {
        const size = 1 + next(12);
        pieces.push(whole.slice(at, at + size));
        at += size;
      }
      for (const defaultCountry of [undefined, 'US']) {
        const options = defaultCountry ? { defaultCountry } : {};
        expect(streamed(pieces, options).deltas.join(''), JSON.stringify(pieces)).toBe(
          maskedWhole(pieces, defaultCountry),
        );
      }
    }
  });

  it('masks the red-team values split into pieces of one, two and three characters', () => {
    const whole = [
      'card 41111111 11111111, iban de89 3704 0044 0532 0130 00, DE893 70400 44053 20130 00,',
      ' Bearer\nabcDEF123456ghiJKL789mno and Bearer  abcDEF123456ghiJKL789mnp,',
      ` mail bоb@exаmple.com, ${pem.join('')}done`,
    ].join('');
    for (const size of [1, 2, 3]) {
      const pieces = whole.match(new RegExp(`[\\s\\S]{1,${size}}`, 'gu')) ?? [];
      const text = streamed(pieces).deltas.join('');
      expect(text).toBe(maskedWhole(pieces));
      for (const leak of [
        '41111111',
        '3704 0044',
        '70400 44053',
        'abcDEF123456',
        'bоb@',
        pemBody[0]?.slice(0, 24),
      ])
        expect(text).not.toContain(leak);
    }
  });
});

describe('PII stream hold-back, sized by the detectors', () => {
  it('holds back only text that could still become a value', () => {
    const { deltas } = streamed(['Hello, ', 'see version 1.2.3 and ', 'the order ', '12345 ', 'today.']);
    // "12345 " may be a card's first group, and waits for the next delta; the last word may still meet an "@",
    // and waits for the end of the stream. Nothing else waits.
    expect(deltas).toEqual(['Hello, ', 'see version 1.2.3 and ', 'the order ', '12345 ', 'today.']);
  });

  it('holds nothing back for kinds not asked for', () => {
    // Only cards: a word cannot grow into a card, so it goes at once.
    expect(streamed(['Hello', ' there', ' order 4111'], { kinds: ['card'] }).deltas).toEqual([
      'Hello',
      ' there',
      ' order ',
      '4111',
    ]);
    // Only emails: digit groups cannot grow into an address's domain once a space follows them.
    expect(streamed(['card 4111 ', '1111 '], { kinds: ['email'] }).deltas).toEqual(['card 4111 ', '1111 ']);
  });

  it('holds digit groups back no further than a card number can reach (19 digits)', () => {
    const { deltas } = streamed(['1234 5678 9012 3456 7890 1234 5678 ', 'done'], { kinds: ['card'] });
    // The first groups can no longer start a card that ends in what is still coming.
    expect(deltas[0]).toBe('1234 5678 9012 ');
  });
});
