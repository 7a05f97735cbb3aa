import { describe, expect, it } from 'vitest';
import { resultText } from '../../../src/tools/mcp/result-content.ts';

describe('the text a model reads for an MCP tool result', () => {
  it('joins text blocks and describes binary content by type and size', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' },
          { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'file:///a.txt', name: 'a' },
          { type: 'resource', resource: { uri: 'file:///b.txt', text: 'bee' } },
          {
            type: 'resource',
            resource: { uri: 'file:///c.bin', blob: 'AAAA', mimeType: 'application/octet-stream' },
          },
        ],
      }),
    ).toBe(
      [
        'one',
        '[image image/png, 5 bytes: not shown, tool results carry text only]',
        '[audio audio/wav, 2 bytes: not shown, tool results carry text only]',
        '[resource file:///a.txt (a)]',
        '[resource file:///b.txt]\nbee',
        '[resource file:///c.bin, application/octet-stream, 3 bytes of binary data: not shown]',
      ].join('\n'),
    );
  });

  it('gives structured content as JSON when no text came with it, and the text when it did', () => {
    expect(resultText({ content: [], structuredContent: { a: 1 } })).toBe('{"a":1}');
    expect(resultText({ content: [{ type: 'text', text: 'a is 1' }], structuredContent: { a: 1 } })).toBe(
      'a is 1',
    );
  });
});
