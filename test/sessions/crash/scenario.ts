/**
 * The crash matrix's scenario: the agents, their deterministic scripted models and their tools. Every reply is a
 * function of the request alone (a restarted process has a fresh model), and every real execution of a model or
 * tool call is written to the effect log, start and end. Each result carries a marker naming its effect
 * (`[m:<request hash>]` in a model's text, `[t:<call id>]` in a tool's result), so whoever reads the store can tell
 * which effects' results it holds.
 *
 *   triage  --3 parallel tools--> transfer_to_support (inputs saying "handoff") or a final answer
 *   support --researcher (agentTool) + lookup--> refund (needs approval; inputs saying "refund") --> final answer
 *   researcher (nested) --search + summarize--> confirm (needs approval; refund tasks) --> findings
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ModelProvider, ModelRequest } from '../../../src/core/model.ts';
import { type Agent, agentTool, defineAgent, type Message, tool } from '../../../src/index.ts';
import { type ScriptedTurn, scriptedModel } from '../../../src/testing/index.ts';
import type { LogLine } from './effect-log.ts';

/** Where the scenario may kill its own process (see the child script). */
export type KillKind =
  | 'model-in'
  | 'model-end'
  | 'model-after'
  | 'tool-in'
  | 'tool-end'
  | 'tool-after'
  | 'nested-model-in'
  | 'nested-tool-in'
  | 'approval-seen'
  | 'approval-seen-top'
  | 'approval-seen-nested'
  | 'approval-decided'
  | 'turn-end'
  | 'send'
  /** A commit holding a turn's run_start is stored: the turn's start, with its agent's first checkpoint. */
  | 'turn-stored';

/** One client input; `queued` ones are sent while the previous turn runs (without waiting for it). */
export interface ScriptedInput {
  text: string;
  queued: boolean;
}

/** Two sessions of three turns each; the second of each is sent while the first runs. */
export const sessionsScript: ReadonlyMap<string, readonly ScriptedInput[]> = new Map([
  [
    'alpha',
    [
      { text: 'alpha#1 handoff refund', queued: false },
      { text: 'alpha#2 follow-up', queued: true },
      { text: 'alpha#3 thanks', queued: false },
    ],
  ],
  [
    'beta',
    [
      { text: 'beta#1 plain', queued: false },
      { text: 'beta#2 handoff', queued: true },
      { text: 'beta#3 refund', queued: false },
    ],
  ],
]);

/** What the scenario reports to the process running it. */
export interface ScenarioHooks {
  /** Writes an effect line (the child adds its process number and pid). */
  effect(line: Omit<Extract<LogLine, { type: 'effect' }>, 'proc' | 'pid'>): void;
  /** Reached a kill point of this kind (at the effect named, if any): the process may SIGKILL itself here. */
  point(kind: KillKind, effect?: { kind: 'model' | 'tool'; session: string; key: string }): void;
}

/** The stable identity of a model call: the agent and the conversation it was sent (system message aside). */
export function modelKey(agent: string, history: readonly Message[]): string {
  const hash = createHash('sha256');
  hash.update(agent);
  hash.update('\n');
  hash.update(JSON.stringify(history));
  return hash.digest('hex').slice(0, 16);
}

/** `alpha#2` in a text: the session and the turn an input (or a task derived from it) belongs to. */
export function tagOf(text: string): { session: string; turn: number } {
  const match = /([a-z]+)#(\d+)/.exec(text);
  if (!match) throw new Error(`no session tag in ${JSON.stringify(text)}`);
  return { session: match[1] as string, turn: Number(match[2]) };
}

export const modelMarker = (key: string) => `[m:${key}]`;
export const toolMarker = (callId: string) => `[t:${callId}]`;

/** A small deterministic delay in [min, min + spread), so kills by time land inside effects. */
function delayOf(seed: string, min: number, spread: number): number {
  return min + ((createHash('sha256').update(seed).digest()[0] as number) % spread);
}

function textOf(message: Message | undefined): string {
  if (!message) return '';
  return typeof message.content === 'string' ? message.content : '';
}

/** The request's messages after the last user message, and that message's text. */
function currentTurn(history: readonly Message[]): { input: string; since: readonly Message[] } {
  let last = -1;
  history.forEach((message, index) => {
    if (message.role === 'user') last = index;
  });
  return { input: textOf(history[last]), since: history.slice(last + 1) };
}

function called(since: readonly Message[], name: string): boolean {
  return since.some(
    (message) => message.role === 'assistant' && (message.toolCalls ?? []).some((call) => call.name === name),
  );
}

type Decide = (history: readonly Message[], key: string) => Omit<ScriptedTurn, 'delayMs'>;

/** A scripted model whose reply depends on the request only, with its start and end logged around the reply. */
function loggedModel(agent: string, decide: Decide, hooks: ScenarioHooks, nested: boolean): ModelProvider {
  const historyOf = (request: ModelRequest) =>
    request.messages.filter((message) => message.role !== 'system');
  const inner = scriptedModel((request) => {
    const history = historyOf(request);
    const key = modelKey(agent, history);
    return { ...decide(history, key), delayMs: delayOf(key, 2, 6) };
  });
  return {
    provider: inner.provider,
    model: `scripted-${agent}`,
    async generate(request) {
      const history = historyOf(request);
      const key = modelKey(agent, history);
      const { session, turn } = tagOf(nested ? textOf(history[0]) : currentTurn(history).input);
      hooks.effect({ type: 'effect', kind: 'model', phase: 'start', key, session, turn, agent });
      const effect = { kind: 'model' as const, session, key };
      hooks.point(nested ? 'nested-model-in' : 'model-in', effect);
      const response = await inner.generate(request);
      hooks.effect({ type: 'effect', kind: 'model', phase: 'end', key, session, turn, agent });
      hooks.point('model-end', effect);
      setImmediate(() => hooks.point('model-after', effect));
      return response;
    },
  };
}

/** Tool calls whose ids derive from the model call that asked for them. */
function calls(
  key: string,
  list: { name: string; args: Record<string, string> }[],
): ScriptedTurn['toolCalls'] {
  return list.map((call, index) => ({ id: `${key}_${index}`, name: call.name, args: call.args }));
}

function loggedTool(
  name: string,
  hooks: ScenarioHooks,
  options: { nested: boolean; needsApproval?: boolean },
) {
  return tool({
    name,
    description: `The ${name} tool of the crash scenario.`,
    input: z.object({ q: z.string() }),
    needsApproval: options.needsApproval ?? false,
    async execute({ q }, ctx) {
      const { session, turn } = tagOf(q);
      const line = {
        type: 'effect' as const,
        kind: 'tool' as const,
        key: ctx.callId,
        idempotencyKey: ctx.idempotencyKey,
        session,
        turn,
        agent: ctx.agent,
        route: ctx.route,
        step: ctx.step,
        tool: name,
      };
      hooks.effect({ ...line, phase: 'start' });
      const effect = { kind: 'tool' as const, session, key: ctx.callId };
      hooks.point(options.nested ? 'nested-tool-in' : 'tool-in', effect);
      await new Promise((resolve) => setTimeout(resolve, delayOf(ctx.callId, 3, 12)));
      hooks.effect({ ...line, phase: 'end' });
      hooks.point('tool-end', effect);
      setImmediate(() => hooks.point('tool-after', effect));
      return `${name}(${q}) ${toolMarker(ctx.callId)}`;
    },
  });
}

/** The scenario's agents; `triage` is every session's entry. */
export function scenarioAgents(hooks: ScenarioHooks): { triage: Agent<unknown>; all: Agent<unknown>[] } {
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Looks things up for support.',
    instructions: 'Research the task.',
    model: loggedModel(
      'researcher',
      (history, key) => {
        const task = textOf(history[0]);
        const since = history.slice(1);
        if (!called(since, 'search'))
          return {
            text: `searching ${modelMarker(key)}`,
            toolCalls: calls(key, [
              { name: 'search', args: { q: `${task} search` } },
              { name: 'summarize', args: { q: `${task} summary` } },
            ]),
            stopReason: 'tool_use',
          };
        if (task.includes('refund') && !called(since, 'confirm'))
          return {
            text: `confirming ${modelMarker(key)}`,
            toolCalls: calls(key, [{ name: 'confirm', args: { q: `${task} confirm` } }]),
            stopReason: 'tool_use',
          };
        // What a person decided on `confirm` goes up to support in the findings.
        const confirmed = since.find((message) => message.role === 'tool' && message.name === 'confirm');
        const decided = confirmed ? ` (confirm: ${textOf(confirmed)})` : '';
        return { text: `findings for ${task}${decided} ${modelMarker(key)}`, stopReason: 'end_turn' };
      },
      hooks,
      true,
    ),
    tools: [
      loggedTool('search', hooks, { nested: true }),
      loggedTool('summarize', hooks, { nested: true }),
      loggedTool('confirm', hooks, { nested: true, needsApproval: true }),
    ],
  });
  const support = defineAgent({
    name: 'support',
    description: 'Answers after research; refunds need approval.',
    instructions: 'Support the user.',
    model: loggedModel(
      'support',
      (history, key) => {
        const { input, since } = currentTurn(history);
        const tag = /[a-z]+#\d+/.exec(input)?.[0] ?? input;
        if (!called(since, 'researcher'))
          return {
            text: `researching ${modelMarker(key)}`,
            toolCalls: calls(key, [
              {
                name: 'researcher',
                args: { input: `research ${tag}${input.includes('refund') ? ' refund' : ''}` },
              },
              { name: 'lookup', args: { q: `${tag} account` } },
            ]) as ScriptedTurn['toolCalls'],
            stopReason: 'tool_use',
          };
        if (input.includes('refund') && !called(since, 'refund'))
          return {
            text: `refunding ${modelMarker(key)}`,
            toolCalls: calls(key, [{ name: 'refund', args: { q: `${tag} refund` } }]),
            stopReason: 'tool_use',
          };
        return { text: `done ${tag} by support ${modelMarker(key)}`, stopReason: 'end_turn' };
      },
      hooks,
      false,
    ),
    tools: [
      agentTool(researcher),
      loggedTool('lookup', hooks, { nested: false }),
      loggedTool('refund', hooks, { nested: false, needsApproval: true }),
    ],
  });
  const triage = defineAgent({
    name: 'triage',
    instructions: 'Route the user.',
    model: loggedModel(
      'triage',
      (history, key) => {
        const { input, since } = currentTurn(history);
        const tag = /[a-z]+#\d+/.exec(input)?.[0] ?? input;
        const handoff = input.includes('handoff');
        if (!called(since, 'lookup')) {
          const batch = [
            { name: 'lookup', args: { q: `${tag} profile` } },
            { name: 'fetch_doc', args: { q: `${tag} doc` } },
          ];
          if (handoff) batch.push({ name: 'lookup', args: { q: `${tag} history` } });
          return {
            text: `looking ${modelMarker(key)}`,
            toolCalls: calls(key, batch),
            stopReason: 'tool_use',
          };
        }
        if (handoff && !called(since, 'transfer_to_support'))
          return {
            text: `handing off ${modelMarker(key)}`,
            toolCalls: [{ id: `${key}_0`, name: 'transfer_to_support', args: { reason: tag } }],
            stopReason: 'tool_use',
          };
        return { text: `done ${tag} by triage ${modelMarker(key)}`, stopReason: 'end_turn' };
      },
      hooks,
      false,
    ),
    tools: [
      loggedTool('lookup', hooks, { nested: false }),
      loggedTool('fetch_doc', hooks, { nested: false }),
    ],
    handoffs: [support],
  });
  return { triage, all: [triage, support, researcher] };
}

/** The final answer each turn must end with (its marker aside). */
export function expectedAnswer(input: string): string {
  const tag = /[a-z]+#\d+/.exec(input)?.[0] ?? input;
  const bySupport = !input.startsWith('beta#1');
  return `done ${tag} by ${bySupport ? 'support' : 'triage'}`;
}
