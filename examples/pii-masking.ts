import { defineAgent, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const sendMail = tool({
  name: 'send_mail',
  description: 'Sends an email',
  input: z.object({ to: z.string(), body: z.string() }),
  execute: ({ to }) => `sent to ${to}`, // gets the real address: placeholders are revealed before tools run
});

const agent = defineAgent({
  name: 'assistant',
  instructions: 'Help the user.',
  // A real model with `pii: { model: true }` sees only placeholders, and answers with them, as this one does.
  model: scriptedModel([
    { toolCalls: [{ name: 'send_mail', args: { to: '<EMAIL_1>', body: 'Card <CARD_1> is blocked.' } }] },
    { text: 'Done: I wrote to <EMAIL_1>.' },
  ]),
  tools: [sendMail],
});

const s = stream(agent, 'Tell bob@example.com that card 4111 1111 1111 1111 is blocked.', {
  pii: { model: true }, // events and inspector frames are masked by default; `model: true` masks the requests too
});
for await (const event of s) {
  if (event.type === 'tool_call') console.log('tool_call', event.data.args);
  if (event.type === 'tool_response') console.log('tool_response', event.data.content);
  if (event.type === 'redaction') console.log('redaction', event.data.target, event.data.counts);
}
console.log('result', (await s.result).text);
