import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool } from '../../src/index.ts';
import { checkTermination } from '../../src/testing/check-termination.ts';
import { replayModel } from '../../src/testing/replay-model.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

/**
 * docs/testing.md shows the test files of examples/testing, which run in CI: each code block marked
 * `<!-- example: path -->` must be that file, word for word, and every example file must be shown. The failure
 * messages it quotes are the ones the kit prints today.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const guide = readFileSync(`${root}docs/testing.md`, 'utf8');

function shownExamples(): Map<string, string> {
  const shown = new Map<string, string>();
  for (const match of guide.matchAll(/<!-- example: (examples\/testing\/\S+) -->\n```ts\n([\s\S]*?)```/g))
    shown.set(match[1] as string, match[2] as string);
  return shown;
}

describe('the testing guide', () => {
  it('shows every example of examples/testing exactly as the file is', () => {
    const shown = shownExamples();
    const files = readdirSync(`${root}examples/testing`)
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `examples/testing/${name}`)
      .sort();
    expect(files.length).toBeGreaterThan(3);
    expect([...shown.keys()].sort()).toEqual(files);
    for (const [path, block] of shown) expect(block, path).toBe(readFileSync(`${root}${path}`, 'utf8'));
  });

  it("is linked from the README's list of guides", () => {
    const readme = readFileSync(`${root}README.md`, 'utf8');
    const section = readme.slice(readme.indexOf('## Guides'));
    expect(section.slice(0, section.indexOf('\n## ', 3))).toContain('](docs/testing.md)');
  });
});

function textBlocks(): string[] {
  return [...guide.matchAll(/```text\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

describe('the failure messages the testing guide quotes', () => {
  it('a cassette mismatch', async () => {
    const weather = tool({
      name: 'weather',
      description: 'Current weather in a city',
      input: z.object({ city: z.string() }),
      execute: ({ city }) => `${city}: sunny, 21°C`,
    });
    const model = replayModel('examples/testing/cassettes/weather.json');
    const agent = defineAgent({
      name: 'forecaster',
      instructions: 'Answer briefly.',
      model,
      tools: [weather],
    });
    const result = await run(agent, 'What is the weather in Paris?');
    expect(textBlocks()[0]).toBe(`${result.error?.message}\n`);
  });

  it('a termination check that found a failing script', async () => {
    const refund = tool({
      name: 'refund',
      description: 'Refunds an order',
      input: z.object({ orderId: z.string(), cents: z.number().int().min(1).max(50_000) }),
      execute: () => 'refunded',
    });
    const billing = defineAgent({
      name: 'billing',
      instructions: 'Refund orders when asked.',
      model: scriptedModel([]),
      tools: [refund],
      limits: { maxSteps: 4, maxToolCallsPerTool: 2 },
    });
    const refundedTwice = (result: Awaited<ReturnType<typeof run>>) =>
      result.steps.flatMap((step) => step.toolCalls).filter((call) => call.name === 'refund' && !call.isError)
        .length > 1
        ? 'refunded twice'
        : undefined;
    const error = await checkTermination(billing, { numRuns: 100, seed: 7, invariant: refundedTwice }).catch(
      (failure: unknown) => failure as Error,
    );
    expect(textBlocks()[1]).toBe(`${(error as Error).message}\n`);
  });
});
