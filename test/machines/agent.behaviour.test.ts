import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { ErrorInfo } from '../../src/core/errors.ts';
import type { GuardrailBlock } from '../../src/core/guardrail-block.ts';
import { defaultLimits, type ResolvedLimits } from '../../src/core/limits.ts';
import type { Message, ToolCall } from '../../src/core/messages.ts';
import type { ModelResponse } from '../../src/core/model.ts';
import {
  type AgentCheckpoint,
  type AgentEvent,
  type AgentMachineInput,
  type AgentMachineOutput,
  agentMachine,
  type DecodeOutcome,
  type EffectCommand,
  type GuardrailPlan,
  type ToolOutcome,
} from '../../src/machines/agent.ts';
import { toolCallSignature } from '../../src/policies/tool-call-signature.ts';

/**
 * The agent statechart driven by hand: a listener on the actor collects the commands the machine emits, and the
 * test answers them with the events the runner would send. Each test states what the loop must do (the commands it
 * issues, the history it keeps, how and why it ends), through the machine's events and output only.
 */

const usage = (n: number) => ({ input: n, output: n, cached: 0, reasoning: 0 });

function reply(partial: Partial<ModelResponse> = {}): ModelResponse {
  return { text: '', toolCalls: [], stopReason: 'end_turn', usage: usage(1), ...partial };
}

const call = (id: string, name = 'search', args: ToolCall['args'] = { q: id }): ToolCall => ({
  id,
  name,
  args,
});

function ok(c: ToolCall, content = `result of ${c.id}`): ToolOutcome {
  return {
    callId: c.id,
    name: c.name,
    content,
    isError: false,
    executed: true,
    degraded: false,
    attempts: 1,
  };
}

interface Harness {
  commands: EffectCommand[];
  send(event: AgentEvent): void;
  /** The last command the machine sent. */
  last(): EffectCommand;
  modelCalls(): Extract<EffectCommand, { type: 'model.call' }>[];
  done(): boolean;
  output(): AgentMachineOutput;
  status(): string;
}

function start(overrides: Partial<AgentMachineInput> = {}, limits: Partial<ResolvedLimits> = {}): Harness {
  const commands: EffectCommand[] = [];
  const actor = createActor(agentMachine, {
    input: {
      sessionId: 's1',
      agent: 'helper',
      limits: { ...defaultLimits, ...limits },
      toolNames: ['search', 'fetch'],
      hasOutputSchema: false,
      history: [{ role: 'user', content: 'go' }],
      baseLength: 0,
      ...overrides,
    },
  });
  actor.on('*', (command) => commands.push(command));
  let failure: unknown;
  actor.subscribe({ error: (error) => (failure = error) });
  actor.start();
  return {
    commands,
    send: (event) => actor.send(event),
    last: () => commands[commands.length - 1] as EffectCommand,
    modelCalls: () => commands.filter((c) => c.type === 'model.call'),
    done: () => actor.getSnapshot().status === 'done',
    output: () => {
      if (failure !== undefined) throw failure;
      const snapshot = actor.getSnapshot();
      expect(snapshot.status).toBe('done');
      return snapshot.output as AgentMachineOutput;
    },
    status: () => actor.getSnapshot().status,
  };
}

const respond = (h: Harness, response: Partial<ModelResponse>, decoded?: DecodeOutcome) =>
  h.send({ type: 'model.response', response: reply(response), ...(decoded ? { decoded } : {}) });

/** Every tool call in the history is answered exactly once, right after the message that asked for it. */
function expectValidHistory(history: readonly Message[]): void {
  const open = new Set<string>();
  for (const message of history) {
    if (message.role === 'tool') {
      expect(open.has(message.toolCallId), `answer to ${message.toolCallId}`).toBe(true);
      open.delete(message.toolCallId);
    } else {
      expect([...open], 'calls left unanswered').toEqual([]);
      if (message.role === 'assistant') for (const c of message.toolCalls ?? []) open.add(c.id);
    }
  }
  expect([...open], 'calls left unanswered').toEqual([]);
}

describe('the agent loop: what it asks its effects for', () => {
  it('a fresh run with tools asks for a tool-use call with the history, schema off while tools are on', () => {
    const h = start({ hasOutputSchema: true });
    expect(h.commands).toEqual([
      {
        type: 'model.call',
        phase: 'toolUse',
        call: 1,
        step: 1,
        toolsEnabled: true,
        schemaEnabled: false,
        history: [{ role: 'user', content: 'go' }],
        disabledTools: [],
        // No parallel input guardrail checks beside this call: the agent has none.
        checkInput: false,
      },
    ]);
  });

  it('an agent without tools goes straight to the final-output phase', () => {
    const h = start({ toolNames: [], hasOutputSchema: true });
    expect(h.commands).toEqual([
      {
        type: 'model.call',
        phase: 'finalOutput',
        call: 1,
        step: 0,
        toolsEnabled: false,
        schemaEnabled: true,
        history: [{ role: 'user', content: 'go' }],
        disabledTools: [],
        // No parallel input guardrail checks beside this call: the agent has none.
        checkInput: false,
      },
    ]);
  });

  it('runs the calls of a tool step, then calls the model again with the results in the history', () => {
    const h = start();
    const [a, b] = [call('a'), call('b', 'fetch', { url: 'x' })];
    respond(h, { toolCalls: [a, b], stopReason: 'tool_use', text: 'looking' });
    expect(h.last()).toEqual({ type: 'tools.run', step: 1, calls: [a, b], disabledTools: [], decisions: [] });
    h.send({ type: 'tools.done', results: [ok(a), { ...ok(b, 'boom'), isError: true }] });
    const next = h.last();
    expect(next).toMatchObject({
      type: 'model.call',
      phase: 'toolUse',
      call: 2,
      step: 2,
      toolsEnabled: true,
    });
    expect(next.type === 'model.call' && next.history).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'looking', agent: 'helper', toolCalls: [a, b] },
      { role: 'tool', toolCallId: 'a', name: 'search', content: 'result of a', isError: false },
      { role: 'tool', toolCallId: 'b', name: 'fetch', content: 'boom', isError: true },
    ]);
    respond(h, { text: 'done', usage: usage(5) });
    const out = h.output();
    expect(out).toMatchObject({
      stopReason: 'completed',
      text: 'done',
      step: 2,
      modelCalls: 2,
      toolCallsRun: 2,
      toolCallCounts: { search: 1, fetch: 1 },
      usage: { input: 6, output: 6 },
      error: null,
      truncated: false,
      forcedFinalAnswer: false,
    });
    expect(out.callSignatures).toEqual({ [toolCallSignature(a)]: 1, [toolCallSignature(b)]: 1 });
    expectValidHistory(out.history);
  });

  it('matches results to calls by id, answers a call without a result, and counts only calls that ran', () => {
    const h = start();
    const [a, b, c] = [call('a'), call('b'), call('c')];
    respond(h, { toolCalls: [a, b, c], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(b, 'B'), { ...ok(a, 'A'), executed: false, isError: true }] });
    respond(h, { text: 'fine' });
    const out = h.output();
    const tools = out.history.filter((m) => m.role === 'tool');
    expect(tools).toEqual([
      { role: 'tool', toolCallId: 'a', name: 'search', content: 'A', isError: true },
      { role: 'tool', toolCallId: 'b', name: 'search', content: 'B', isError: false },
      {
        role: 'tool',
        toolCallId: 'c',
        name: 'search',
        content: 'Not run: the tool runner returned no result for this call.',
        isError: true,
      },
    ]);
    expect(out.toolCallsRun).toBe(1);
    expect(out.toolCallCounts).toEqual({ search: 3 });
  });

  it('keeps reasoning blocks on the assistant message and adds up usage', () => {
    const h = start({ toolNames: [] });
    const reasoning = [{ provider: 'test', text: 'hmm', data: { thinking: 'hmm' } }];
    respond(h, { text: 'yes', reasoning, usage: usage(3) });
    const out = h.output();
    expect(out.history.at(-1)).toEqual({ role: 'assistant', content: 'yes', agent: 'helper', reasoning });
    expect(out.usage).toMatchObject({ input: 3, output: 3 });
    // No reasoning, no calls: the message carries neither field.
    const plain = start();
    respond(plain, { text: 'plain', reasoning: [] });
    expect(plain.output().history.at(-1)).toEqual({ role: 'assistant', content: 'plain', agent: 'helper' });
  });
});

describe('the agent loop: degraded tools', () => {
  it('stops offering a tool whose every attempt failed, and ends as tool_failure_degraded', () => {
    const h = start({ hasOutputSchema: true });
    const a = call('a');
    respond(h, { toolCalls: [a], stopReason: 'tool_use' });
    h.send({
      type: 'tools.done',
      results: [{ ...ok(a, 'down'), isError: true, degraded: true, attempts: 3 }],
    });
    expect(h.last()).toMatchObject({
      type: 'model.call',
      toolsEnabled: true,
      schemaEnabled: false,
      disabledTools: ['search'],
    });
    const b = call('b');
    respond(h, { toolCalls: [b], stopReason: 'tool_use' });
    h.send({
      type: 'tools.done',
      results: [{ ...ok(b, 'down'), isError: true, degraded: true, attempts: 3 }],
    });
    const c = call('c', 'fetch');
    respond(h, { toolCalls: [c], stopReason: 'tool_use' });
    expect(h.last()).toMatchObject({ type: 'tools.run', disabledTools: ['search'] });
    h.send({
      type: 'tools.done',
      results: [{ ...ok(c, 'down'), isError: true, degraded: true, attempts: 3 }],
    });
    // Every tool is down: the agent is asked as a tool-less one, with its schema.
    expect(h.last()).toMatchObject({
      type: 'model.call',
      toolsEnabled: false,
      schemaEnabled: true,
      disabledTools: ['search', 'fetch'],
    });
    respond(h, { text: '{"x":1}' }, { ok: true, value: { x: 1 } });
    const out = h.output();
    expect(out.stopReason).toBe('tool_failure_degraded');
    expect(out.degradedTools).toEqual(['search', 'fetch']);
    expect(out.output).toEqual({ x: 1 });
  });
});

describe('the agent loop: the step limit', () => {
  it('stops with max_steps after the last allowed tool step', () => {
    const h = start({}, { maxSteps: 2 });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))] });
    expect(h.done()).toBe(false);
    respond(h, { toolCalls: [call('b')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('b'))] });
    const out = h.output();
    expect(out).toMatchObject({ stopReason: 'max_steps', step: 2, modelCalls: 2, error: null });
    expect(h.modelCalls()).toHaveLength(2);
  });

  it('with finalAnswerOnMaxSteps asks one last tool-less answer and keeps max_steps as the reason', () => {
    const h = start({}, { maxSteps: 1, finalAnswerOnMaxSteps: true });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))] });
    expect(h.last()).toMatchObject({
      type: 'model.call',
      phase: 'finalOutput',
      toolsEnabled: false,
      call: 2,
    });
    respond(h, { text: 'summary' });
    expect(h.output()).toMatchObject({
      stopReason: 'max_steps',
      text: 'summary',
      forcedFinalAnswer: 'max_steps',
    });
  });

  it('counts the steps of nested agents against the limit', () => {
    const h = start({}, { maxSteps: 5 });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))], nestedSteps: 3 });
    expect(h.last()).toMatchObject({ type: 'model.call', step: 5 });
    respond(h, { toolCalls: [call('b')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('b'))], nestedSteps: 1 });
    expect(h.output()).toMatchObject({ stopReason: 'max_steps', step: 6 });
  });

  it('nested steps alone can reach the limit: the run stops before calling the model again', () => {
    const h = start({}, { maxSteps: 3 });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))], nestedSteps: 5 });
    expect(h.output()).toMatchObject({ stopReason: 'max_steps', step: 6, modelCalls: 1 });
  });

  it('a reply of reasoning only asks again, up to the step limit', () => {
    const reasoning = [{ provider: 'test', text: 'hmm', data: {} }];
    const h = start({}, { maxSteps: 2 });
    respond(h, { reasoning, stopReason: undefined });
    expect(h.modelCalls()).toHaveLength(2);
    expect(h.last()).toMatchObject({ type: 'model.call', phase: 'toolUse', call: 2, step: 2 });
    respond(h, { reasoning, stopReason: undefined });
    expect(h.output()).toMatchObject({ stopReason: 'max_steps', step: 2, modelCalls: 2 });
  });

  it('a reply of reasoning only at the limit gets the last answer when finalAnswerOnMaxSteps is on', () => {
    const reasoning = [{ provider: 'test', text: 'hmm', data: {} }];
    const h = start({}, { maxSteps: 1, finalAnswerOnMaxSteps: true });
    respond(h, { reasoning, stopReason: undefined });
    expect(h.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput' });
    respond(h, { text: 'ok' });
    expect(h.output()).toMatchObject({ stopReason: 'max_steps', forcedFinalAnswer: 'max_steps', text: 'ok' });
  });
});

describe('the agent loop: an answer at a tool-call limit', () => {
  const refusal = (message: string) =>
    `Not run: ${message} No more tools can run: answer with what you have.`;

  it('a repeated call is refused to the model, which answers once more without tools; the reason stays duplicate_tool_call', () => {
    const h = start({}, { maxDuplicateToolCalls: 1 });
    respond(h, { toolCalls: [call('a', 'search', { q: 1 })], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a', 'search', { q: 1 }))] });
    respond(h, { toolCalls: [call('b', 'search', { q: 1 })], stopReason: 'tool_use' });
    expect(h.commands.filter((c) => c.type === 'tools.run')).toHaveLength(1);
    const last = h.last();
    expect(last).toMatchObject({ type: 'model.call', phase: 'finalOutput', toolsEnabled: false, call: 3 });
    expect(last.type === 'model.call' && last.history.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'b',
      name: 'search',
      content: refusal('Tool "search" was called with the same arguments 2 times (limit 1).'),
      isError: true,
    });
    respond(h, { text: 'the answer from what I found' });
    const out = h.output();
    expect(h.status()).toBe('done');
    expect(out).toMatchObject({
      stopReason: 'duplicate_tool_call',
      text: 'the answer from what I found',
      forcedFinalAnswer: 'duplicate_tool_call',
      modelCalls: 3,
      toolCallsRun: 1,
      openCalls: [],
      error: null,
    });
    expectValidHistory(out.history);
  });

  it('a call past the per-tool cap refuses every call of its turn, then the last answer ends with tool_call_limit', () => {
    const h = start({}, { maxToolCallsPerTool: 1 });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))] });
    respond(h, { toolCalls: [call('f', 'fetch'), call('b')], stopReason: 'tool_use' });
    const last = h.last();
    expect(last).toMatchObject({ type: 'model.call', phase: 'finalOutput', toolsEnabled: false });
    const message = refusal('Tool "search" would be called 2 times (limit 1 per run).');
    expect(last.type === 'model.call' && last.history.slice(-2)).toEqual([
      { role: 'tool', toolCallId: 'f', name: 'fetch', content: message, isError: true },
      { role: 'tool', toolCallId: 'b', name: 'search', content: message, isError: true },
    ]);
    respond(h, { text: 'done' });
    expect(h.output()).toMatchObject({ stopReason: 'tool_call_limit', text: 'done', toolCallsRun: 1 });
    expectValidHistory(h.output().history);
  });

  it('the last answer decodes against the schema with its retries, and keeps the limit as the reason', () => {
    const h = start({ hasOutputSchema: true }, { maxDuplicateToolCalls: 1, maxDecodeRetries: 1 });
    respond(h, { toolCalls: [call('a')], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a'))] });
    respond(h, { toolCalls: [call('b', 'search', { q: 'a' })], stopReason: 'tool_use' });
    expect(h.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput', schemaEnabled: true });
    h.send({ type: 'model.response', response: reply({ text: 'x' }), decoded: { ok: false, error: 'e' } });
    h.send({ type: 'model.response', response: reply({ text: '1' }), decoded: { ok: true, value: 1 } });
    expect(h.output()).toMatchObject({ stopReason: 'duplicate_tool_call', output: 1, retryCount: 1 });
  });

  it('a run resumed in its last answer after a tool-call limit ends with that limit; a stored true is the step limit', () => {
    const resume = (forcedFinalAnswer: AgentCheckpoint['forcedFinalAnswer']): AgentCheckpoint => ({
      history: [{ role: 'user', content: 'go' }],
      step: 1,
      modelCalls: 1,
      retryCount: 0,
      toolCallsRun: 0,
      toolCallCounts: {},
      callSignatures: {},
      degradedTools: [],
      usage: usage(1),
      openCalls: [],
      decision: null,
      forcedFinalAnswer,
      approvals: null,
      phase: 'finalOutput',
    });
    for (const [stored, reason] of [
      ['tool_call_limit', 'tool_call_limit'],
      [true, 'max_steps'],
      [false, 'completed'],
    ] as const) {
      const h = start({ resume: resume(stored) });
      expect(h.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput' });
      respond(h, { text: 'answer' });
      expect(h.output()).toMatchObject({ stopReason: reason, text: 'answer' });
    }
  });
});

describe('the agent loop: answers and structured output', () => {
  it('without a schema, text is the answer as it is', () => {
    const h = start();
    respond(h, { text: 'hello', stopReason: 'end_turn' });
    expect(h.output()).toMatchObject({
      stopReason: 'completed',
      text: 'hello',
      output: null,
      outputDecoded: false,
      decodeError: null,
    });
    expect(h.modelCalls()).toHaveLength(1);
  });

  it('a reply cut by max_tokens is kept and flagged truncated', () => {
    const h = start();
    respond(h, { text: 'half', stopReason: 'max_tokens' });
    expect(h.output()).toMatchObject({ stopReason: 'completed', text: 'half', truncated: true });
  });

  it('with a schema, a tool-use reply that already decodes completes the run', () => {
    const h = start({ hasOutputSchema: true });
    h.send({
      type: 'model.response',
      response: reply({ text: '{"x":1}' }),
      decoded: { ok: true, value: { x: 1 } },
    });
    expect(h.output()).toMatchObject({ stopReason: 'completed', output: { x: 1 }, outputDecoded: true });
  });

  it('with a schema, a tool-use reply that does not decode moves to the final-output phase', () => {
    const h = start({ hasOutputSchema: true });
    h.send({
      type: 'model.response',
      response: reply({ text: 'prose' }),
      decoded: { ok: false, error: 'bad' },
    });
    expect(h.done()).toBe(false);
    expect(h.last()).toMatchObject({
      type: 'model.call',
      phase: 'finalOutput',
      schemaEnabled: true,
      call: 2,
    });
  });

  it('retries a final answer that does not decode, telling the model why, then stops with decode_failed', () => {
    const h = start({ toolNames: [], hasOutputSchema: true }, { maxDecodeRetries: 1 });
    h.send({
      type: 'model.response',
      response: reply({ text: 'nope' }),
      decoded: { ok: false, error: 'x is missing' },
    });
    const retry = h.last();
    expect(retry).toMatchObject({ type: 'model.call', phase: 'finalOutput', call: 2 });
    expect(retry.type === 'model.call' && retry.history.at(-1)).toEqual({
      role: 'user',
      content:
        'Your answer could not be used. x is missing\nReply again with only the JSON value, no prose and no code fence.',
    });
    h.send({
      type: 'model.response',
      response: reply({ text: 'still' }),
      decoded: { ok: false, error: 'y' },
    });
    const out = h.output();
    expect(out).toMatchObject({
      stopReason: 'decode_failed',
      retryCount: 1,
      modelCalls: 2,
      text: 'still',
      decodeError: 'y',
      outputDecoded: false,
      output: null,
    });
    expect(out.error).toEqual({
      name: 'RunStopped',
      code: 'decode_failed',
      message: 'The final answer did not decode after 2 attempt(s): y',
    });
  });

  it('a retried answer that decodes completes with the value', () => {
    const h = start({ toolNames: [], hasOutputSchema: true }, { maxDecodeRetries: 2 });
    h.send({ type: 'model.response', response: reply({ text: 'a' }), decoded: { ok: false, error: 'e' } });
    h.send({ type: 'model.response', response: reply({ text: '1' }), decoded: { ok: true, value: 1 } });
    expect(h.output()).toMatchObject({
      stopReason: 'completed',
      output: 1,
      outputDecoded: true,
      retryCount: 1,
    });
  });

  it('a final reply the effects did not decode counts as a failed decode with a schema, as the answer without', () => {
    const withSchema = start({ toolNames: [], hasOutputSchema: true }, { maxDecodeRetries: 0 });
    withSchema.send({ type: 'model.response', response: reply({ text: 'x' }) });
    expect(withSchema.output()).toMatchObject({
      stopReason: 'decode_failed',
      decodeError: 'The reply was not decoded.',
    });
    const plain = start({ toolNames: [] });
    plain.send({ type: 'model.response', response: reply({ text: 'x', stopReason: 'max_tokens' }) });
    expect(plain.output()).toMatchObject({
      stopReason: 'completed',
      text: 'x',
      output: null,
      outputDecoded: false,
      truncated: true,
    });
  });

  it('drops a stray tool call in the final-output phase so no call is left unanswered', () => {
    const h = start({ toolNames: [] });
    respond(h, { text: 'x', toolCalls: [call('a')] });
    const out = h.output();
    expect(out.history.at(-1)).toEqual({ role: 'assistant', content: 'x', agent: 'helper' });
    expectValidHistory(out.history);
  });

  it('a refusal in the final-output phase stops as guardrail_blocked with the refusal as the text', () => {
    const h = start({ toolNames: [], hasOutputSchema: true });
    respond(h, { stopReason: 'refusal', refusal: 'not allowed' });
    const out = h.output();
    expect(out).toMatchObject({ stopReason: 'guardrail_blocked', text: 'not allowed' });
    expect(out.error).toEqual({
      name: 'RunStopped',
      code: 'guardrail_blocked',
      message: 'The model refused to answer: not allowed',
    });
    const filtered = start({ toolNames: [] });
    respond(filtered, { stopReason: 'content_filter', text: 'partial' });
    expect(filtered.output()).toMatchObject({ stopReason: 'guardrail_blocked', text: 'partial' });
    expect(filtered.output().error?.message).toBe('The model refused to answer.');
  });
});

describe('the agent loop: how it ends early', () => {
  it('a refusal during tool use stops with the policy message, the refusal as the answer', () => {
    const h = start();
    respond(h, { stopReason: 'refusal', refusal: 'no' });
    const out = h.output();
    expect(out).toMatchObject({ stopReason: 'guardrail_blocked', text: 'no' });
    expect(out.error).toEqual({
      name: 'RunStopped',
      code: 'guardrail_blocked',
      message: 'The model refused: no',
    });
    // Text the model did write stays the answer.
    const written = start();
    respond(written, { stopReason: 'refusal', refusal: 'no', text: 'I will not' });
    expect(written.output().text).toBe('I will not');
  });

  it('an inconsistent reply (tool_use without calls or text) fails the run', () => {
    const h = start();
    respond(h, { stopReason: 'tool_use' });
    expect(h.output()).toMatchObject({ stopReason: 'error', error: { code: 'error' } });
  });

  it('with finalAnswerOnToolLimits off, a repeated call stops the run and answers the calls it did not run', () => {
    const h = start({}, { maxDuplicateToolCalls: 1, finalAnswerOnToolLimits: false });
    respond(h, { toolCalls: [call('a', 'search', { q: 1 })], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(call('a', 'search', { q: 1 }))] });
    respond(h, { toolCalls: [call('b', 'search', { q: 1 })], stopReason: 'tool_use' });
    const out = h.output();
    expect(out.stopReason).toBe('duplicate_tool_call');
    expect(out.openCalls).toEqual([]);
    expect(out.history.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'b', isError: true });
    expect(out.history.at(-1)?.content).toBe(`Not run: ${out.error?.message}`);
    expectValidHistory(out.history);
  });

  it('a stop_sequence reply with tool calls takes the text as the answer and answers the calls', () => {
    const h = start();
    respond(h, { text: 'final', toolCalls: [call('a')], stopReason: 'stop_sequence' });
    const out = h.output();
    expect(out).toMatchObject({ stopReason: 'completed', text: 'final' });
    expect(out.history.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'a',
      name: 'search',
      content: 'Not run: the turn ended with stop reason stop_sequence',
      isError: true,
    });
    expect(h.commands.some((c) => c.type === 'tools.run')).toBe(false);
  });

  it('a failed model call fails the run with its error', () => {
    const h = start();
    const error: ErrorInfo = { name: 'ProviderError', code: 'provider_error', message: 'down' };
    h.send({ type: 'model.error', error });
    expect(h.output()).toMatchObject({ stopReason: 'error', error, modelCalls: 1 });
    const final = start({ toolNames: [] });
    final.send({ type: 'model.error', error });
    expect(final.output()).toMatchObject({ stopReason: 'error', error, modelCalls: 1 });
  });

  it('a call the budget refuses stops with budget_exhausted and the manager message', () => {
    for (const toolNames of [['search'], []]) {
      const h = start({ toolNames });
      h.send({ type: 'model.denied', reason: 'budget', message: 'The $1 budget is spent.' });
      expect(h.output()).toMatchObject({
        stopReason: 'budget_exhausted',
        error: { name: 'RunStopped', code: 'budget_exhausted', message: 'The $1 budget is spent.' },
      });
    }
  });

  it('abort and timeout end the run and answer the calls in flight', () => {
    const aborted = start();
    respond(aborted, { toolCalls: [call('a')], stopReason: 'tool_use' });
    aborted.send({ type: 'abort', reason: 'user left' });
    const out = aborted.output();
    expect(out).toMatchObject({ stopReason: 'aborted', error: { code: 'aborted', message: 'user left' } });
    expect(out.history.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'a',
      content: 'Not run: user left',
    });
    const plain = start();
    plain.send({ type: 'abort' });
    expect(plain.output().error?.message).toBe('the run was aborted');
    const late = start();
    late.send({ type: 'timeout' });
    expect(late.output()).toMatchObject({
      stopReason: 'timed_out',
      error: { name: 'RunStopped', code: 'timed_out', message: 'the run timed out' },
    });
  });

  it('a state that could not be made durable fails the run with that error', () => {
    const h = start();
    const error: ErrorInfo = { name: 'StoreError', code: 'store_failed', message: 'disk full' };
    h.send({ type: 'effects.failed', error });
    expect(h.output()).toMatchObject({ stopReason: 'error', error });
    // A batch that could not start: its calls are answered with why.
    const batch = start();
    respond(batch, { toolCalls: [call('a')], stopReason: 'tool_use' });
    batch.send({ type: 'effects.failed', error });
    expect(batch.output().history.at(-1)).toMatchObject({ toolCallId: 'a', content: 'Not run: disk full' });
    expect(batch.output().error).toEqual(error);
  });
});

describe('the agent loop: handoffs', () => {
  const passed = (c: ToolCall): ToolOutcome => ({
    ...ok(c, 'Transferred to billing.'),
    executed: false,
    attempts: 0,
    handoff: true,
  });
  const refusedBy = (c: ToolCall, content: string): ToolOutcome => ({
    ...ok(c, content),
    isError: true,
    executed: false,
    attempts: 0,
  });

  it('asks the tool gate about the handoff call alone, before anything else of the turn runs', () => {
    const h = start({ toolNames: ['search', 'to_billing'], handoffTools: { to_billing: 'billing' } });
    const [a, t] = [call('a'), call('t', 'to_billing', {})];
    respond(h, { toolCalls: [a, t], stopReason: 'tool_use' });
    expect(h.done()).toBe(false);
    expect(h.last()).toMatchObject({ type: 'tools.run', calls: [t] });
  });

  it('a handoff the gate lets through stays open for the session; the turn’s other calls are answered', () => {
    const h = start({ toolNames: ['search', 'to_billing'], handoffTools: { to_billing: 'billing' } });
    const [a, t] = [call('a'), call('t', 'to_billing', {})];
    respond(h, { toolCalls: [a, t], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [passed(t)] });
    const out = h.output();
    expect(h.status()).toBe('done');
    expect(out.handoff).toEqual({ target: 'billing', call: t });
    expect(out.openCalls).toEqual([t]);
    expect(out.stopReason).toBeNull();
    expect(out.history.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'a',
      name: 'search',
      content: 'Not run: the conversation was handed off to billing',
      isError: true,
    });
  });

  it('a handoff alone leaves the history as the model wrote it', () => {
    const h = start({ toolNames: ['to_billing'], handoffTools: { to_billing: 'billing' } });
    const t = call('t', 'to_billing', {});
    respond(h, { toolCalls: [t], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [passed(t)] });
    expect(h.output().history.at(-1)).toMatchObject({ role: 'assistant', toolCalls: [t] });
  });

  it('a handoff the gate refuses is no handoff: the model reads why and goes on', () => {
    const h = start({ toolNames: ['search', 'to_billing'], handoffTools: { to_billing: 'billing' } });
    const [a, t] = [call('a'), call('t', 'to_billing', {})];
    respond(h, { toolCalls: [a, t], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [refusedBy(t, 'Error: permission denied')] });
    expect(h.done()).toBe(false);
    expect(h.last()).toMatchObject({ type: 'model.call', step: 2 });
    respond(h, { text: 'fine' });
    const out = h.output();
    expect(out.handoff).toBeNull();
    expect(out.stopReason).toBe('completed');
    expectValidHistory(out.history);
    const answers = out.history.filter((message) => message.role === 'tool').map((m) => m.content);
    expect(answers).toEqual([
      'Error: permission denied',
      'Not run: the handoff to billing asked for in the same turn did not happen; call it again if it is still needed',
    ]);
  });

  it('a handoff that waits for a person hands off once approved, and not when rejected', () => {
    for (const decision of ['approve', 'reject'] as const) {
      const h = start({ toolNames: ['search', 'to_billing'], handoffTools: { to_billing: 'billing' } });
      const [a, t] = [call('a'), call('t', 'to_billing', {})];
      respond(h, { toolCalls: [a, t], stopReason: 'tool_use' });
      h.send({ type: 'tools.done', results: [], pending: [{ callId: 't', kind: 'approval' }] });
      expect(h.last()).toMatchObject({ type: 'approval.wait', pending: [{ callId: 't' }] });
      h.send({
        type: 'approval.decided',
        callId: 't',
        decision: decision === 'approve' ? { type: 'approve' } : { type: 'reject', reason: 'no' },
      });
      expect(h.last()).toMatchObject({ type: 'tools.run', calls: [t], decisions: [{ callId: 't' }] });
      if (decision === 'approve') {
        h.send({ type: 'tools.done', results: [passed(t)] });
        expect(h.output().handoff).toEqual({ target: 'billing', call: t });
      } else {
        h.send({ type: 'tools.done', results: [refusedBy(t, 'Not run: a person rejected this call: no')] });
        respond(h, { text: 'fine' });
        expect(h.output().handoff).toBeNull();
        expectValidHistory(h.output().history);
      }
    }
  });
});

describe('the agent loop: calls that wait for people', () => {
  function waiting() {
    const h = start();
    const [a, b, c] = [call('a'), call('b'), call('c')];
    respond(h, { toolCalls: [a, b, c], stopReason: 'tool_use' });
    const pending = [
      { callId: 'b', kind: 'approval' as const },
      { callId: 'c', kind: 'question' as const },
    ];
    h.send({ type: 'tools.done', results: [ok(a)], pending, nestedSteps: 2 });
    return { h, a, b, c, pending };
  }

  it('answers the calls that ran and announces the ones that wait', () => {
    const { h, b, c, pending } = waiting();
    expect(h.last()).toEqual({ type: 'approval.wait', step: 3, calls: [b, c], pending });
    expect(h.done()).toBe(false);
  });

  it('runs the batch again once every waiting call is decided, with the decisions in order', () => {
    const { h, b, c } = waiting();
    h.send({ type: 'approval.decided', callId: 'zzz', decision: { type: 'approve' } });
    h.send({ type: 'approval.decided', callId: 'c', decision: { type: 'answer', text: 'blue' } });
    h.send({ type: 'approval.decided', callId: 'c', decision: { type: 'answer', text: 'red' } });
    expect(h.last().type).toBe('approval.wait');
    h.send({ type: 'approval.decided', callId: 'b', decision: { type: 'reject', reason: 'no' } });
    expect(h.last()).toEqual({
      type: 'tools.run',
      step: 3,
      calls: [b, c],
      disabledTools: [],
      decisions: [
        { callId: 'c', decision: { type: 'answer', text: 'blue' } },
        { callId: 'b', decision: { type: 'reject', reason: 'no' } },
      ],
    });
    h.send({ type: 'tools.done', results: [ok(b, 'rejected'), ok(c, 'blue')] });
    expect(h.last()).toMatchObject({ type: 'model.call', step: 4 });
    respond(h, { text: 'ok' });
    const out = h.output();
    expect(out.approvals).toBeNull();
    expect(out.toolCallsRun).toBe(3);
    expectValidHistory(out.history);
  });
});

describe('the agent loop: resuming from a checkpoint', () => {
  const base: AgentCheckpoint = {
    history: [{ role: 'user', content: 'go' }],
    step: 1,
    modelCalls: 1,
    retryCount: 0,
    toolCallsRun: 0,
    toolCallCounts: {},
    callSignatures: {},
    degradedTools: [],
    usage: usage(1),
    openCalls: [],
    decision: null,
    forcedFinalAnswer: false,
    approvals: null,
    phase: 'toolUse',
  };

  it('with open calls the policy decided to run, runs them first', () => {
    const a = call('a');
    const h = start({
      resume: {
        ...base,
        history: [...base.history, { role: 'assistant', content: '', toolCalls: [a] }],
        openCalls: [a],
        decision: { kind: 'continue_with_tools', calls: [a] },
      },
    });
    expect(h.commands).toEqual([
      { type: 'tools.run', step: 1, calls: [a], disabledTools: [], decisions: [] },
    ]);
  });

  it('with open calls still waiting for people, waits again; once all are decided, runs them', () => {
    const a = call('a');
    const approvals = { pending: [{ callId: 'a', kind: 'approval' as const }], decided: [] };
    const h = start({
      resume: { ...base, openCalls: [a], decision: { kind: 'continue_with_tools', calls: [a] }, approvals },
    });
    expect(h.commands).toEqual([{ type: 'approval.wait', step: 1, calls: [a], pending: approvals.pending }]);
    const decided = start({
      resume: {
        ...base,
        openCalls: [a],
        decision: { kind: 'continue_with_tools', calls: [a] },
        approvals: { ...approvals, decided: [{ callId: 'a', decision: { type: 'approve' } }] },
      },
    });
    expect(decided.last()).toMatchObject({ type: 'tools.run', decisions: [{ callId: 'a' }] });
  });

  it('in the final-output phase, resumes there with its retries', () => {
    const h = start(
      { hasOutputSchema: true, resume: { ...base, phase: 'finalOutput', retryCount: 1 } },
      { maxDecodeRetries: 1 },
    );
    expect(h.commands).toEqual([
      expect.objectContaining({ type: 'model.call', phase: 'finalOutput', call: 2, step: 1 }),
    ]);
    h.send({ type: 'model.response', response: reply({ text: 'x' }), decoded: { ok: false, error: 'e' } });
    expect(h.output()).toMatchObject({ stopReason: 'decode_failed', retryCount: 1 });
  });

  it('at the step limit, stops with max_steps, or asks the last answer when allowed', () => {
    const atLimit = { ...base, step: 2 };
    const stopped = start({ resume: atLimit }, { maxSteps: 2 });
    expect(stopped.commands).toEqual([]);
    expect(stopped.output()).toMatchObject({ stopReason: 'max_steps', step: 2 });
    const answered = start({ resume: atLimit }, { maxSteps: 2, finalAnswerOnMaxSteps: true });
    expect(answered.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput' });
    const toolless = start({ toolNames: [], resume: atLimit }, { maxSteps: 2 });
    expect(toolless.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput' });
  });

  it('a checkpoint stored without the newer fields resumes with no retries used and nothing waiting', () => {
    const { retryCount: _r, forcedFinalAnswer: _f, approvals: _a, ...older } = base;
    const h = start(
      { hasOutputSchema: true, resume: { ...older, phase: 'finalOutput' } as AgentCheckpoint },
      { maxDecodeRetries: 1 },
    );
    h.send({ type: 'model.response', response: reply({ text: 'x' }), decoded: { ok: false, error: 'e' } });
    expect(h.last()).toMatchObject({ type: 'model.call', phase: 'finalOutput' });
    h.send({ type: 'model.response', response: reply({ text: '1' }), decoded: { ok: true, value: 1 } });
    expect(h.output()).toMatchObject({
      stopReason: 'completed',
      retryCount: 1,
      forcedFinalAnswer: false,
      approvals: null,
    });
  });

  it('continues the counters of the checkpoint', () => {
    const h = start({ resume: { ...base, step: 3, modelCalls: 4, toolCallsRun: 2, usage: usage(7) } });
    expect(h.last()).toMatchObject({ type: 'model.call', call: 5, step: 4 });
    respond(h, { text: 'ok', usage: usage(1) });
    expect(h.output()).toMatchObject({ modelCalls: 5, step: 4, toolCallsRun: 2, usage: { input: 8 } });
  });
});

describe('the agent loop: guardrails', () => {
  const plan = (partial: Partial<GuardrailPlan>): GuardrailPlan => ({
    input: false,
    parallelInput: false,
    output: false,
    tools: false,
    ...partial,
  });
  const block = (stage: GuardrailBlock['stage'], extra: Partial<GuardrailBlock> = {}): GuardrailBlock => ({
    name: 'no-secrets',
    stage,
    message: 'found a secret',
    ...extra,
  });
  const history: Message[] = [
    { role: 'user', content: 'earlier' },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'go' },
  ];

  it('checks the latest user text before any model call, then calls the model in the phase the agent starts in', () => {
    for (const toolNames of [['search'], []]) {
      const h = start({ toolNames, history, guardrails: plan({ input: true }) });
      expect(h.commands).toEqual([
        { type: 'guardrails.check', stage: 'input', call: 0, value: 'go', text: 'go' },
      ]);
      expect(h.done()).toBe(false);
      h.send({ type: 'guardrails.done' });
      expect(h.commands).toHaveLength(2);
      expect(h.last()).toMatchObject({
        type: 'model.call',
        phase: toolNames.length > 0 ? 'toolUse' : 'finalOutput',
        call: 1,
        checkInput: false,
      });
    }
  });

  it('an input block stops the run before the model is asked, naming the guardrail', () => {
    const h = start({ history, guardrails: plan({ input: true }) });
    const blocked = block('input');
    h.send({ type: 'guardrails.done', blocked });
    expect(h.modelCalls()).toEqual([]);
    expect(h.output()).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: blocked,
      modelCalls: 0,
      history,
      error: {
        name: 'RunStopped',
        code: 'guardrail_blocked',
        message: 'Blocked by guardrail "no-secrets" (input): found a secret',
      },
    });
  });

  it('a run resumed after a model call does not check its input again', () => {
    const resume: AgentCheckpoint = {
      history,
      step: 1,
      modelCalls: 1,
      retryCount: 0,
      toolCallsRun: 0,
      toolCallCounts: {},
      callSignatures: {},
      degradedTools: [],
      usage: usage(1),
      openCalls: [],
      decision: null,
      forcedFinalAnswer: false,
      approvals: null,
      phase: 'toolUse',
    };
    const h = start({ resume, history, guardrails: plan({ input: true, parallelInput: true }) });
    expect(h.commands.map((c) => c.type)).toEqual(['model.call']);
    expect(h.last()).toMatchObject({ call: 2, checkInput: false });
  });

  it('parallel input guardrails run beside the first model call only', () => {
    const h = start({ guardrails: plan({ parallelInput: true }) });
    expect(h.last()).toMatchObject({ type: 'model.call', call: 1, checkInput: true });
    const a = call('a');
    respond(h, { toolCalls: [a], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(a)] });
    expect(h.last()).toMatchObject({ type: 'model.call', call: 2, checkInput: false });

    const final = start({ toolNames: [], hasOutputSchema: true, guardrails: plan({ parallelInput: true }) });
    expect(final.last()).toMatchObject({ phase: 'finalOutput', call: 1, checkInput: true });
    final.send({
      type: 'model.response',
      response: reply({ text: 'x' }),
      decoded: { ok: false, error: 'e' },
    });
    expect(final.last()).toMatchObject({ phase: 'finalOutput', call: 2, checkInput: false });
  });

  it('a block during a model call stops the run, counting the call and its usage when it was made', () => {
    const a = call('a');
    const h = start({ guardrails: plan({ parallelInput: true }) });
    respond(h, { text: 'looking', toolCalls: [a], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(a)] });
    const blocked = block('output');
    h.send({ type: 'guardrail.blocked', block: blocked, modelCalled: true, usage: usage(5) });
    expect(h.output()).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: blocked,
      modelCalls: 2,
      usage: usage(6),
      text: '',
      error: {
        code: 'guardrail_blocked',
        message: 'Blocked by guardrail "no-secrets" (output): found a secret',
      },
    });

    const before = start({ toolNames: [], guardrails: plan({ parallelInput: true }) });
    before.send({ type: 'guardrail.blocked', block: block('input'), modelCalled: false });
    expect(before.output()).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: block('input'),
      modelCalls: 0,
      usage: usage(0),
    });
  });

  it('checks the final answer with the output guardrails before the run completes', () => {
    const h = start({ guardrails: plan({ output: true }) });
    respond(h, { text: 'the answer' });
    expect(h.last()).toEqual({
      type: 'guardrails.check',
      stage: 'output',
      call: 1,
      value: 'the answer',
      text: 'the answer',
    });
    expect(h.done()).toBe(false);
    h.send({ type: 'guardrails.done' });
    expect(h.output()).toMatchObject({ stopReason: 'completed', text: 'the answer', guardrail: null });
  });

  it('checks a decoded final answer as its value', () => {
    const h = start({ toolNames: [], hasOutputSchema: true, guardrails: plan({ output: true }) });
    h.send({
      type: 'model.response',
      response: reply({ text: '{"n":1}' }),
      decoded: { ok: true, value: { n: 1 } },
    });
    expect(h.last()).toEqual({
      type: 'guardrails.check',
      stage: 'output',
      call: 1,
      value: { n: 1 },
      text: '{"n":1}',
    });
    h.send({ type: 'guardrails.done' });
    expect(h.output()).toMatchObject({ stopReason: 'completed', output: { n: 1 }, outputDecoded: true });
  });

  it('an output block withholds the answer: not returned, and not kept in the history', () => {
    const h = start({ toolNames: [], hasOutputSchema: true, history, guardrails: plan({ output: true }) });
    h.send({
      type: 'model.response',
      response: reply({ text: '{"n":1}' }),
      decoded: { ok: true, value: { n: 1 } },
    });
    const blocked = block('output');
    h.send({ type: 'guardrails.done', blocked });
    const output = h.output();
    expect(output).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: blocked,
      text: '',
      outputDecoded: false,
      modelCalls: 1,
      error: { code: 'guardrail_blocked' },
    });
    expect(output.output).toBeNull();
    expect(output.history).toEqual([
      ...history,
      { role: 'assistant', agent: 'helper', content: '(answer withheld: blocked by guardrail "no-secrets")' },
    ]);
  });

  it('a tool guardrail block records the batch’s results and stops the run', () => {
    const a = call('a');
    const b = call('b', 'fetch');
    const h = start({ guardrails: plan({ tools: true }) });
    respond(h, { text: 'let me look', toolCalls: [a, b], stopReason: 'tool_use' });
    const blocked = block('tool_input', { callId: 'b', tool: 'fetch' });
    h.send({
      type: 'tools.done',
      results: [ok(a), { ...ok(b, 'blocked by a guardrail'), executed: false, blocked }],
    });
    const output = h.output();
    expect(h.modelCalls()).toHaveLength(1);
    expect(output).toMatchObject({
      stopReason: 'guardrail_blocked',
      guardrail: blocked,
      // What the model wrote before the blocked call is kept: only an output block withholds text.
      text: 'let me look',
      modelCalls: 1,
      error: {
        code: 'guardrail_blocked',
        message: 'Blocked by guardrail "no-secrets" (tool_input of tool "fetch"): found a secret',
      },
    });
    expectValidHistory(output.history);
    expect(output.history.slice(-2)).toMatchObject([
      { role: 'tool', toolCallId: 'a', content: 'result of a' },
      { role: 'tool', toolCallId: 'b', content: 'blocked by a guardrail' },
    ]);
  });

  it('with tool guardrails, a batch that none blocked goes on as usual', () => {
    const a = call('a');
    const h = start({ guardrails: plan({ tools: true }) });
    respond(h, { toolCalls: [a], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [ok(a)] });
    expect(h.done()).toBe(false);
    expect(h.last()).toMatchObject({ type: 'model.call', call: 2 });
  });

  it('without tool guardrails in the plan, a batch goes on as usual', () => {
    const a = call('a');
    const h = start({ guardrails: plan({}) });
    respond(h, { toolCalls: [a], stopReason: 'tool_use' });
    h.send({ type: 'tools.done', results: [{ ...ok(a), blocked: block('tool_output') }] });
    expect(h.done()).toBe(false);
    expect(h.last()).toMatchObject({ type: 'model.call', call: 2 });
  });
});
