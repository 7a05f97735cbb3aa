import { stacklessError } from '../core/abort.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import { lastUserText } from '../core/messages.ts';
import type { Usage } from '../core/usage.ts';
import type { AgentGuardrails } from '../guardrails/guardrail.ts';
import type { AgentEvent, EffectCommand } from '../machines/agent.ts';
import type { EffectsHost } from './effects.ts';
import { checkGuardrails, type GuardrailPlace } from './guardrail-checks.ts';
import { answerText, type CallHooks, emitResponse, modelCall } from './model-gate.ts';
import { contextInfoOf, emitFrom, type RunRuntime } from './run-runtime.ts';
import { StreamGate } from './stream-gate.ts';

/**
 * The guardrail stage of a run: the input and output checks the agent machine asks for (`guardrails.check`), and the
 * model call with guardrails beside it (parallel input checks, streaming output checks that gate the text deltas).
 */

/** Where this run's guardrails check: for their info, their events and their timers. */
export function guardrailPlace(runtime: RunRuntime, stage: GuardrailPlace['stage']): GuardrailPlace {
  return {
    stage,
    run: contextInfoOf(runtime),
    caller: runtime,
    clock: runtime.clock,
    emit: runtime.bus.listening ? (data) => emitFrom(runtime, 'guardrail', data) : undefined,
  };
}

/** The input or output guardrails of a `guardrails.check`: answered by one `guardrails.done`. */
export function checkGuardrailStage(
  host: EffectsHost,
  runtime: RunRuntime,
  command: Extract<EffectCommand, { type: 'guardrails.check' }>,
): void {
  const guardrails = runtime.agent.guardrails;
  const list = (command.stage === 'input' ? guardrails?.input : guardrails?.output) ?? [];
  const place = guardrailPlace(runtime, command.stage);
  const check = () => checkGuardrails(list, command.value, command.text, place, host.signal);
  // The answer these output checks cover leaves with their verdict.
  const answer = (block: GuardrailBlock | null) => {
    if (command.stage === 'output') host.releaseHeld(runtime, block === null);
    host.answer(doneEvent(block));
  };
  // A durable executor records the decision, so a replay decides the same way (a judge model may not).
  const outcome = runtime.runEffect
    ? runtime.runEffect(
        `${runtime.route ?? runtime.agent.name}/guardrails/${command.stage}/${command.call}`,
        'tool',
        async () => check(),
      )
    : check();
  if (outcome instanceof Promise)
    void outcome.then(answer, (error: unknown) =>
      // The executor could not run or record the check: fail closed, as for a check that failed.
      answer({
        name: list[0]?.name ?? 'guardrails',
        stage: command.stage,
        message: `the check could not be run: ${error instanceof Error ? error.message : String(error)}`,
      }),
    );
  else answer(outcome);
}

/**
 * A model call with guardrails beside it: the parallel input guardrails (first call only) and the streaming output
 * guardrails. The call gets its own AbortSignal (also aborted when the run ends); a block aborts it and answers
 * `guardrail.blocked` instead of the response. A response is answered only once the input checks passed.
 */
export function callModelGuarded(
  host: EffectsHost,
  runtime: RunRuntime,
  command: Extract<EffectCommand, { type: 'model.call' }>,
  guardrails: AgentGuardrails,
): void {
  const durable = runtime.durable;
  const controller = new AbortController();
  const stopWaiting = host.abortWaiters.add(() => controller.abort(host.signal.reason));
  const signal = controller.signal;
  let settled = false;
  let modelCalled = false;
  const settle = (event: AgentEvent) => {
    if (settled) return;
    settled = true;
    stopWaiting();
    host.answer(event);
  };
  const block = (found: GuardrailBlock, usage?: Usage) => {
    if (settled) return;
    controller.abort(stacklessError(`Guardrail "${found.name}" blocked this call.`));
    const event: AgentEvent = { type: 'guardrail.blocked', block: found, modelCalled };
    if (usage) event.usage = usage;
    settle(event);
  };
  // Parallel input guardrails first: when they answer at once, a block means the model is never asked.
  let input: GuardrailBlock | null | Promise<GuardrailBlock | null> = null;
  if (command.checkInput && guardrails.parallelInput.length > 0) {
    const text = lastUserText(command.history);
    input = checkGuardrails(guardrails.parallelInput, text, text, guardrailPlace(runtime, 'input'), signal);
    if (input instanceof Promise) input.then((found) => found && block(found));
    else if (input) {
      block(input);
      return;
    }
  }
  let gate: StreamGate | undefined;
  if (guardrails.streamingOutput.length > 0) {
    const place = guardrailPlace(runtime, 'output');
    gate = new StreamGate(
      (text, partial) =>
        checkGuardrails(guardrails.streamingOutput, text, text, { ...place, partial }, signal),
      (delta) => {
        if (!signal.aborted) runtime.onDelta(delta);
      },
      (found) => block(found),
    );
  }
  const hooks: CallHooks = { onGenerate: () => (modelCalled = true) };
  if (gate) {
    // Made in a local first: V8 allocates a function literal stored straight into a property in the old generation,
    // where it would keep the run's gate alive until a full collection.
    const textGate: CallHooks['textGate'] = (delta) => gate.push(delta);
    hooks.textGate = textGate;
  }
  void modelCall(runtime, command, signal, hooks).then(async (event) => {
    if (settled || host.closed) return;
    const usage = event.type === 'model.response' ? event.response.usage : undefined;
    // A blocked response leaves no text: its model_response says what was spent, never what was said.
    const withheld = () => {
      if (event.type === 'model.response' && runtime.bus.listening)
        emitResponse(runtime, command.step, event.response, false);
    };
    if (gate && event.type === 'model.response') {
      const found = await gate.finish(answerText(event.response));
      if (found) {
        withheld();
        block(found, usage);
        return;
      }
    }
    // The input checks decide before the response (or the failure) is let through.
    const inputBlock = await input;
    if (inputBlock) {
      withheld();
      block(inputBlock, usage);
      return;
    }
    if (settled || host.closed) return;
    if (event.type === 'model.response') {
      host.accept(runtime, command.step, event.response);
      if (durable) {
        try {
          await durable.recordModel(command.call, event);
        } catch (error) {
          settled = true;
          stopWaiting();
          host.fail(error);
          return;
        }
      }
    }
    settle(event);
  });
}

/** The answer to a `guardrails.check`. */
function doneEvent(block: GuardrailBlock | null): AgentEvent {
  return block ? { type: 'guardrails.done', blocked: block } : { type: 'guardrails.done' };
}
