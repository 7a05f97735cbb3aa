import { blockedPatterns, defineAgent, guardrail, llmJudge, stream, tokenLimit } from 'troupe';
import { scriptedModel } from 'troupe/testing';

// A judge model for the example; use any provider, e.g. openai('gpt-4o-mini').
const judge = scriptedModel([{ text: '{"decision":"allow","reason":"a billing question"}' }]);

const support = defineAgent({
  name: 'support',
  instructions: 'Answer billing questions.',
  model: scriptedModel([{ deltas: ['Your card ', 'on file is ', '4111 1111 1111 1111.'] }]),
  guardrails: {
    input: [
      tokenLimit({ max: 2000 }), // checked before the first model call
      llmJudge({ model: judge, instructions: 'Block anything but billing.', mode: 'parallel' }),
    ],
    output: [
      // Checked on the text as it streams: nothing after the match is delivered.
      blockedPatterns([/\b(?:\d{4}[ -]?){3}\d{4}\b/], { name: 'no-card-numbers', streaming: true }),
      guardrail({
        name: 'polite',
        check: (_answer, { text }) =>
          /stupid/i.test(text) ? { decision: 'warn', message: 'tone' } : { decision: 'allow' },
      }),
    ],
  },
});

const events = stream(support, 'Which card do I have on file?');
for await (const event of events) {
  if (event.type === 'delta') process.stdout.write(event.data.content);
  if (event.type === 'guardrail' && event.data.decision !== 'allow')
    console.log(`\n[${event.data.guardrail}: ${event.data.decision}, ${event.data.message}]`);
}
const result = await events.result;
console.log(result.stopReason, result.guardrail?.name); // guardrail_blocked no-card-numbers
