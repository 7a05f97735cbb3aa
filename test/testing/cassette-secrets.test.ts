import { describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../src/core/model.ts';
import { cassetteRequest } from '../../src/testing/cassette.ts';
import { stripSecrets } from '../../src/testing/cassette-secrets.ts';

describe('stripSecrets', () => {
  it('replaces credential-shaped text inside any string', () => {
    const secrets = [
      'sk-proj-abcdefghijklmnopqrstuvwx',
      'sk-ant-api03-abcdefghijklmnopqrstuvwx',
      `AIza${'x'.repeat(35)}`,
      `ghp_${'a'.repeat(36)}`,
      `github_pat_${'b'.repeat(40)}`,
      'xoxb-1234567890-abcdefghij',
      'AKIAABCDEFGHIJKLMNOP',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
    ];
    for (const secret of secrets)
      expect(stripSecrets({ nested: [`key: ${secret} (keep this)`] })).toEqual({
        nested: ['key: [redacted] (keep this)'],
      });
    expect(stripSecrets('Authorization: Bearer abc.def-ghi_123456')).toBe('Authorization: [redacted]');
    expect(stripSecrets('a task to do, sk-short and the word skeleton')).toBe(
      'a task to do, sk-short and the word skeleton',
    );
  });

  it('replaces the values of fields named like secrets, and the ones you add', () => {
    expect(
      stripSecrets(
        { apiKey: 'plain', API_KEY: 'x', 'x-api-key': 'y', password: 1, note: 'fine', pin: '1234' },
        { secretKeys: ['pin'] },
      ),
    ).toEqual({
      apiKey: '[redacted]',
      API_KEY: '[redacted]',
      'x-api-key': '[redacted]',
      password: '[redacted]',
      note: 'fine',
      pin: '[redacted]',
    });
    expect(stripSecrets('order 123-45-6789', { secretPatterns: [/\d{3}-\d{2}-\d{4}/] })).toBe(
      'order [redacted]',
    );
  });

  it('keeps the field names of tool and output schemas in a stored request, and strips the messages', () => {
    const request: ModelRequest = {
      messages: [
        { role: 'user', content: 'log in' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'login', args: { user: 'ann', password: 'hunter2' } }],
        },
        { role: 'tool', toolCallId: 'c1', content: 'token sk-abcdefghijklmnopqrstuvwxyz issued' },
      ],
      tools: [
        {
          name: 'login',
          description: 'Logs in',
          parameters: { type: 'object', properties: { password: { type: 'string' } } },
        },
      ],
      output: { name: 'out', schema: { type: 'object', properties: { secret: { type: 'string' } } } },
      settings: { temperature: 0, providerOptions: { apiKey: 'from-settings' } },
      signal: new AbortController().signal,
      onDelta: () => {},
    };
    const stored = cassetteRequest(request);
    expect(stored.tools).toEqual(request.tools);
    expect(stored.output).toEqual(request.output);
    expect(stored.messages[1]).toMatchObject({
      toolCalls: [{ args: { user: 'ann', password: '[redacted]' } }],
    });
    expect(stored.messages[2]).toMatchObject({ content: 'token [redacted] issued' });
    expect(stored.settings).toEqual({ temperature: 0, providerOptions: { apiKey: '[redacted]' } });
    expect(Object.keys(stored).sort()).toEqual(['messages', 'output', 'settings', 'tools']);
  });
});

describe('stripSecrets on hostile keys', () => {
  it('copies a __proto__ key as a plain field', () => {
    const copy = stripSecrets(JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
