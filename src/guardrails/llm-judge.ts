import { type Agent, defineAgent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import { isModelProvider, type ModelProvider } from '../core/model.ts';
import { zod } from '../core/zod.ts';
import type { RunOptions } from '../run/run.ts';
import { callerOf } from '../run/run-runtime.ts';
import { run } from '../sessions/run.ts';
import { type Guardrail, type GuardrailCheckInfo, type GuardrailOptions, guardrail } from './guardrail.ts';
import type { GuardrailVerdict } from './verdict.ts';

export interface LlmJudgeOptions extends Omit<GuardrailOptions, 'name' | 'check'> {
  /** Default 'llm-judge'. */
  name?: string | undefined;
  /** The model that judges; the judge is then an agent with a structured verdict as output. */
  model?: ModelProvider | undefined;
  /** What to allow, warn about or block, in the judge's words; with `model`, added to the judge's instructions. */
  instructions?: string | undefined;
  /**
   * An agent of your own that judges, instead of `model`: its output is `{ decision, reason? }` (decision allow,
   * warn or block), or its text starts with ALLOW, WARN or BLOCK.
   */
  agent?: Agent<unknown> | undefined;
}

/** The judge's verdict, built by each `llmJudge()` call rather than when Troupe is imported (zod loads on first use). */
function verdictSchema() {
  const z = zod();
  return z.object({
    decision: z.enum(['allow', 'warn', 'block']),
    reason: z.string(),
  });
}

const judgeInstructions = `You are a guardrail. You read one text from an AI agent's run (its user's input, its answer, a tool call's arguments or a tool's result) and decide whether it may pass: "allow", "warn" (it may pass, but a person should know why) or "block" (it must not pass). Give a short reason.`;

let judgeRuns = 0;

/**
 * A guardrail whose check is a nested agent run: a judge model (or agent) reads the text and decides. The judge's
 * spend counts on the calling run's budgets (like an agent used as a tool); its run ends when the check is no
 * longer wanted. A judge run that does not complete, or a verdict it cannot give, counts as a failed check
 * (`onError`, block by default).
 */
export function llmJudge(options: LlmJudgeOptions): Guardrail {
  const { name = 'llm-judge', model, instructions, agent, ...rest } = options ?? {};
  if ((model === undefined) === (agent === undefined))
    throw new ConfigError('llmJudge(): give either a model or an agent that judges.');
  if (agent !== undefined && agent?.kind !== 'agent')
    throw new ConfigError('llmJudge(): agent must be an agent from defineAgent().');
  if (model !== undefined && !isModelProvider(model))
    throw new ConfigError('llmJudge(): model must be a ModelProvider.');
  if (instructions !== undefined && typeof instructions !== 'string')
    throw new ConfigError('llmJudge(): instructions must be a string.');
  const verdict = verdictSchema();
  const judge: Agent<unknown> =
    agent ??
    (defineAgent({
      name: 'guardrail-judge',
      instructions: instructions ? `${judgeInstructions}\n\n${instructions}` : judgeInstructions,
      model: model as ModelProvider,
      output: verdict,
      limits: { maxSteps: 1 },
    }) as Agent<unknown>);
  const task = agent && instructions ? `${instructions}\n\n` : '';
  return guardrail({
    ...rest,
    name,
    check: async (_value, info) => {
      const result = await run(judge, `${task}${judgePrompt(info)}`, judgeOptions(info));
      if (result.status !== 'completed')
        throw new Error(
          `the judge run ended ${result.stopReason}${result.error ? `: ${result.error.message}` : ''}`,
        );
      const given = verdictFrom(verdict, result.output, result.text);
      if (!given) throw new Error('the judge gave no verdict (allow, warn or block)');
      return given;
    },
  });
}

function judgePrompt(info: GuardrailCheckInfo): string {
  const what = info.tool ? `${info.stage} of tool "${info.tool}"` : info.stage;
  return `Stage: ${what}\n\nText to judge:\n<<<\n${info.text}\n>>>`;
}

/** The judge runs in the caller's place: its spend on the caller's budgets, on the caller's clock. */
function judgeOptions(info: GuardrailCheckInfo): RunOptions {
  const caller = callerOf(info);
  judgeRuns += 1;
  return {
    // A judge agent of your own may read the caller's context (its tools and instructions too).
    context: info.context,
    signal: info.signal,
    sessionId: `${caller?.key ?? info.sessionId}:guardrail:${judgeRuns}`,
    parent: info,
  };
}

function verdictFrom(
  schema: ReturnType<typeof verdictSchema>,
  output: unknown,
  text: string,
): GuardrailVerdict | null {
  const parsed = schema.partial({ reason: true }).safeParse(output);
  if (parsed.success) {
    const { decision, reason } = parsed.data;
    return reason ? { decision, message: reason } : { decision };
  }
  const match = /^\s*(ALLOW|WARN|BLOCK)\b[\s:.-]*(.*)$/is.exec(text);
  if (!match) return null;
  const decision = (match[1] as string).toLowerCase() as GuardrailVerdict['decision'];
  const message = (match[2] as string).trim();
  return message ? { decision, message } : { decision };
}
