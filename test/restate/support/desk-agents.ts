import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { type Agent, defineAgent } from '../../../src/agent/define-agent.ts';
import { sleep } from '../../../src/core/abort.ts';
import type { Message, ToolCall } from '../../../src/core/messages.ts';
import { messageText } from '../../../src/core/messages.ts';
import type { ModelProvider, ModelRequest, ModelResponse } from '../../../src/core/model.ts';
import { agentTool } from '../../../src/sessions/agent-tool.ts';
import { askHuman } from '../../../src/tools/ask-human.ts';
import { tool } from '../../../src/tools/tool.ts';

/**
 * Agents for the Restate tests. Their model is deterministic: every reply is derived from the request (the last
 * messages and the history length), never from a call counter, because a crashed process starts over. Every model
 * and tool call goes through `effect`, which writes `start` and `end` lines to the probe and passes three crash
 * points: before the call starts (a step boundary), right after it started, and right before it returns.
 */

export type CrashPoint = 'before-start' | 'after-start' | 'before-return';

export interface EffectLine {
  pid: number;
  kind: 'model' | 'tool' | 'marker';
  /** The effect: `<tag>|<agent>|m<history length>` for a model call, `<tag>|tool|<callId>` for a tool call. */
  key: string;
  /** The turn (or sub-run) it belongs to, e.g. `s1/t2` or `s1/t2/r`. */
  tag: string;
  phase: 'start' | 'end' | 'crash' | 'server-kill';
  point?: CrashPoint;
  /** A tool call's idempotency key. */
  idem?: string;
}

export interface EffectProbe {
  record(line: Omit<EffectLine, 'pid'>): void;
  /** Passes a crash point: the probe may end the process here. */
  point(where: CrashPoint, line: Omit<EffectLine, 'pid' | 'phase'>): void;
}

/** Lines kept in memory, no crashes: for tests that run the endpoint in their own process. */
export function memoryProbe(): EffectProbe & { lines: EffectLine[] } {
  const lines: EffectLine[] = [];
  return {
    lines,
    record: (line) => lines.push({ pid: process.pid, ...line }),
    point: () => undefined,
  };
}

/** Lines appended to a file shared across processes; the `crashAt`-th crash point SIGKILLs this process. */
export function fileProbe(path: string, crashAt: number): EffectProbe {
  let points = 0;
  const write = (line: Omit<EffectLine, 'pid'>) =>
    appendFileSync(path, `${JSON.stringify({ pid: process.pid, ...line })}\n`);
  return {
    record: write,
    point: (where, line) => {
      points += 1;
      if (crashAt > 0 && points === crashAt) {
        write({ ...line, phase: 'crash', point: where });
        process.kill(process.pid, 'SIGKILL');
      }
    },
  };
}

export async function effect<T>(
  probe: EffectProbe,
  line: Omit<EffectLine, 'pid' | 'phase'>,
  work: () => Promise<T>,
): Promise<T> {
  probe.point('before-start', line);
  probe.record({ ...line, phase: 'start' });
  probe.point('after-start', line);
  const value = await work();
  probe.record({ ...line, phase: 'end' });
  probe.point('before-return', line);
  return value;
}

/** The tag in the last user message (`[s1/t2] ...`), which every reply and tool argument carries on. */
export function tagOf(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Message;
    if (message.role !== 'user') continue;
    const found = /\[([^\]]+)\]/.exec(messageText(message));
    return found?.[1] ?? 'untagged';
  }
  return 'untagged';
}

export type Reply = { text?: string; toolCalls?: ToolCall[] };

/** A model whose reply is a pure function of the request, logged and crashable as an effect. */
export function deskModel(
  agent: string,
  probe: EffectProbe,
  delayMs: number,
  reply: (messages: readonly Message[], tag: string) => Reply,
): ModelProvider {
  return {
    provider: 'scripted',
    model: `desk-${agent}`,
    generate(request: ModelRequest): Promise<ModelResponse> {
      const tag = tagOf(request.messages);
      const key = `${tag}|${agent}|m${request.messages.length}`;
      return effect(probe, { kind: 'model', key, tag }, async () => {
        if (delayMs > 0) await sleep(delayMs, request.signal);
        const answer = reply(request.messages, tag);
        return {
          text: answer.text ?? '',
          toolCalls: answer.toolCalls ?? [],
          stopReason: answer.toolCalls ? 'tool_use' : 'end_turn',
          usage: { input: request.messages.length * 10, output: 5, cached: 0, reasoning: 0 },
        };
      });
    },
  };
}

export function last(messages: readonly Message[]): Message | undefined {
  return messages[messages.length - 1];
}

/** The contents of the tool messages after the last assistant message. */
export function latestResults(messages: readonly Message[]): string[] {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Message;
    if (message.role !== 'tool') break;
    results.unshift(message.content);
  }
  return results;
}

export interface DeskAgents {
  triage: Agent<unknown>;
  support: Agent<unknown>;
  researcher: Agent<unknown>;
  clerk: Agent<unknown>;
}

/**
 * - triage: looks up and computes (two parallel tool calls), then hands off to support;
 * - support: asks researcher (an agent used as a tool, so another object), then answers;
 * - researcher: looks up, then answers;
 * - clerk: a refund that needs approval and a question for a person (askHuman) in one batch, then answers.
 */
export function deskAgents(probe: EffectProbe, delayMs = 5): DeskAgents {
  const toolEffect = <T>(tag: string, callId: string, idem: string, work: () => Promise<T>) =>
    effect(probe, { kind: 'tool', key: `${tag}|tool|${callId}`, tag, idem }, work);

  const lookup = tool({
    name: 'lookup',
    description: 'Looks a topic up.',
    input: z.object({ tag: z.string(), topic: z.string() }),
    execute: ({ tag, topic }, ctx) =>
      toolEffect(tag, ctx.callId, ctx.idempotencyKey, async () => {
        if (delayMs > 0) await sleep(delayMs, ctx.signal);
        return `facts about ${topic}`;
      }),
  });
  const compute = tool({
    name: 'compute',
    description: 'Multiplies two numbers.',
    input: z.object({ tag: z.string(), a: z.number(), b: z.number() }),
    execute: ({ tag, a, b }, ctx) =>
      toolEffect(tag, ctx.callId, ctx.idempotencyKey, async () => {
        if (delayMs > 0) await sleep(delayMs, ctx.signal);
        return a * b;
      }),
  });
  const refund = tool({
    name: 'refund',
    description: 'Refunds an amount; a person approves each refund.',
    input: z.object({ tag: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: ({ tag, amount }, ctx) =>
      toolEffect(tag, ctx.callId, ctx.idempotencyKey, async () => `refunded ${amount}`),
  });

  const researcher = defineAgent({
    name: 'researcher',
    description: 'Researches a topic and reports what it found.',
    instructions: 'You are researcher.',
    tools: [lookup],
    model: deskModel('researcher', probe, delayMs, (messages, tag) =>
      last(messages)?.role === 'tool'
        ? { text: `research ${tag}: ${latestResults(messages).join(', ')}` }
        : {
            toolCalls: [
              { id: `r${messages.length}`, name: 'lookup', args: { tag, topic: `topic of ${tag}` } },
            ],
          },
    ),
  });
  const support = defineAgent({
    name: 'support',
    description: 'Answers support questions.',
    instructions: 'You are support.',
    tools: [agentTool(researcher, { name: 'research' })],
    model: deskModel('support', probe, delayMs, (messages, tag) => {
      const previous = last(messages);
      if (previous?.role === 'tool' && previous.name === 'research')
        return { text: `support ${tag}: ${previous.content}` };
      return {
        toolCalls: [
          { id: `s${messages.length}`, name: 'research', args: { input: `[${tag}/r] research for ${tag}` } },
        ],
      };
    }),
  });
  const triage = defineAgent({
    name: 'triage',
    instructions: 'You are triage.',
    tools: [lookup, compute],
    handoffs: [support],
    model: deskModel('triage', probe, delayMs, (messages, tag) => {
      if (last(messages)?.role === 'tool')
        return {
          toolCalls: [{ id: `h${messages.length}`, name: 'transfer_to_support', args: { reason: tag } }],
        };
      const calls: ToolCall[] = [
        { id: `a${messages.length}`, name: 'lookup', args: { tag, topic: 'orders' } },
        { id: `b${messages.length}`, name: 'compute', args: { tag, a: messages.length, b: 2 } },
      ];
      return { toolCalls: calls };
    }),
  });
  const clerk = defineAgent({
    name: 'clerk',
    instructions: 'You are clerk.',
    tools: [refund, askHuman()],
    model: deskModel('clerk', probe, delayMs, (messages, tag) => {
      if (last(messages)?.role === 'tool')
        return { text: `clerk ${tag}: ${latestResults(messages).join(' | ')}` };
      const calls: ToolCall[] = [
        { id: `f${messages.length}`, name: 'refund', args: { tag, amount: messages.length } },
        { id: `q${messages.length}`, name: 'ask_human', args: { question: `Which account for ${tag}?` } },
      ];
      return { toolCalls: calls };
    }),
  });
  return { triage, support, researcher, clerk };
}
