import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import {
  blockedPatterns,
  ConfigError,
  createResourceManager,
  defineAgent,
  llmJudge,
  run,
  tokenLimit,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/** The built-in guardrails: token limit (real tokenizer), blocked patterns, an LLM judge on the run's budget. */

const info = {
  stage: 'input' as const,
  signal: new AbortController().signal,
  context: undefined,
  agent: 'a',
  sessionId: 's',
  route: 'a',
  turn: 1,
  partial: false,
};

describe('tokenLimit', () => {
  it('allows exactly max tokens and blocks one more, counted with the o200k tokenizer (not characters)', async () => {
    const text = 'Tokenizers split text into pieces: 日本語のテキストは文字数とトークン数が違います。';
    const tokens = countTokens(text);
    // A character estimate would be far off: the boundary below only holds for the real count.
    expect(tokens).not.toBe(Math.ceil(text.length / 4));
    const atLimit = tokenLimit({ max: tokens });
    const under = tokenLimit({ max: tokens - 1 });
    expect(await atLimit.check(text, { ...info, text })).toEqual({ decision: 'allow' });
    const blocked = await under.check(text, { ...info, text });
    expect(blocked).toMatchObject({ decision: 'block' });
    // Once loaded, a check answers synchronously.
    expect(atLimit.check(text, { ...info, text })).toEqual({ decision: 'allow' });
  });

  it('defaults to 4096 tokens and ends a run with a longer input guardrail_blocked', async () => {
    const long = 'word '.repeat(5000);
    expect(countTokens(long)).toBeGreaterThan(4096);
    const model = scriptedModel([{ text: 'x' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, guardrails: { input: [tokenLimit()] } });
    const result = await run(agent, long);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toMatchObject({ name: 'token-limit', stage: 'input' });
    expect(model.calls).toBe(0);
    const short = await run(
      defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([{ text: 'ok' }]),
        guardrails: { input: [tokenLimit()] },
      }),
      'word '.repeat(4000),
    );
    expect(short.stopReason).toBe('completed');
  });

  it('rejects bad options', () => {
    expect(() => tokenLimit({ max: -1 })).toThrow(ConfigError);
    expect(() => tokenLimit({ encoding: 'p50k' as never })).toThrow(ConfigError);
  });
});

describe('blockedPatterns', () => {
  it('blocks a match (also of a global regex, checked again and again), names the pattern, allows the rest', () => {
    const g = blockedPatterns([/\bpassword\b/gi, /\d{3}-\d{2}-\d{4}/]);
    for (let i = 0; i < 3; i++) {
      expect(g.check('my Password is', { ...info, text: '' })).toEqual({
        decision: 'block',
        message: 'matched the blocked pattern /\\bpassword\\b/i',
      });
    }
    expect(g.check('ssn 123-45-6789', { ...info, text: '' })).toMatchObject({ decision: 'block' });
    expect(g.check({ note: 'password' }, { ...info, text: '' })).toMatchObject({ decision: 'block' });
    expect(g.check('all clear', { ...info, text: '' })).toEqual({ decision: 'allow' });
    expect(() => blockedPatterns([])).toThrow(ConfigError);
    expect(() => blockedPatterns(['x' as never])).toThrow(ConfigError);
  });
});

describe('llmJudge', () => {
  it('the judge model decides: block ends the run with its reason, allow lets it go on', async () => {
    const judge = scriptedModel([
      { text: '{"decision":"allow","reason":"harmless"}' },
      { text: '{"decision":"block","reason":"insults the user"}' },
    ]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'you fool' }]),
      guardrails: {
        input: [llmJudge({ name: 'judge-in', model: judge, instructions: 'Block insults.' })],
        output: [llmJudge({ name: 'judge-out', model: judge, instructions: 'Block insults.' })],
      },
    });
    const result = await run(agent, 'hello');
    expect(judge.calls).toBe(2);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toEqual({ name: 'judge-out', stage: 'output', message: 'insults the user' });
    // The judge read the text and the instructions.
    const asked = judge.requests[1]?.messages
      .map((m) => (typeof m.content === 'string' ? m.content : ''))
      .join('\n');
    expect(asked).toContain('Block insults.');
    expect(asked).toContain('you fool');
  });

  it("the judge's usage counts against the calling run's budget", async () => {
    const resources = createResourceManager();
    const judge = scriptedModel([
      { text: '{"decision":"allow","reason":"ok"}', usage: { input: 40, output: 10 } },
    ]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'answer', usage: { input: 3, output: 2 } }]),
      guardrails: { input: [llmJudge({ model: judge })] },
    });
    const result = await run(agent, 'hi', { resources, sessionId: 'caller', budget: { tokens: 1000 } });
    expect(result.stopReason).toBe('completed');
    expect(resources.usage({ session: 'caller' }).session?.spentTokens).toBe(55);
    resources.stop();

    // A budget the judge uses up leaves nothing for the agent's own call.
    const tight = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'answer' }]),
      guardrails: {
        input: [
          llmJudge({
            model: scriptedModel([
              { text: '{"decision":"allow","reason":"ok"}', usage: { input: 900, output: 200 } },
            ]),
          }),
        ],
      },
    });
    const spent = await run(tight, 'hi', { budget: { tokens: 1000 } });
    expect(spent.stopReason).toBe('budget_exhausted');
  });

  it('a judge agent of your own may answer in text; a judge run that fails blocks (fail closed)', async () => {
    const own = defineAgent({
      name: 'own-judge',
      instructions: '',
      model: scriptedModel([{ text: 'WARN: borderline' }]),
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'fine' }]),
      guardrails: { output: [llmJudge({ agent: own })] },
    });
    const result = await run(agent, 'x');
    expect(result.stopReason).toBe('completed');

    const broken = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'fine' }]),
      guardrails: { output: [llmJudge({ model: scriptedModel([{ error: 'judge down' }]) })] },
    });
    const failed = await run(broken, 'x');
    expect(failed.stopReason).toBe('guardrail_blocked');
    expect(failed.guardrail?.message).toContain('judge down');
    expect(() => llmJudge({} as never)).toThrow(ConfigError);
  });
});
