import {
  executeStep,
  type Framework,
  modelHooks,
  modelLatency,
  nextTurn,
  type Outcome,
  type Scenario,
  type Turn,
} from '../scenario.ts';

/**
 * The floor: the agent loop written by hand with no framework. Plain message objects, the scripted model, the tool
 * run in parallel with Promise.all, streaming as an async generator. What any framework adds is measured against it.
 */
type FloorMessage =
  | { role: 'user' | 'assistant'; content: string; calls?: { id: string; name: string; args: unknown }[] }
  | { role: 'tool'; id: string; content: string };

async function callModel(scenario: Scenario, messages: FloorMessage[]): Promise<Turn> {
  modelHooks.onCall?.();
  await modelLatency(scenario);
  let results = 0;
  for (const message of messages) if (message.role === 'tool') results++;
  return nextTurn(scenario, results);
}

async function* streamModel(scenario: Scenario, messages: FloorMessage[]): AsyncGenerator<string, Turn> {
  const turn = await callModel(scenario, messages);
  if (turn.kind === 'text') for (const piece of turn.pieces) yield piece;
  return turn;
}

async function loop(scenario: Scenario, input: string, onDelta?: (text: string) => void): Promise<string> {
  const messages: FloorMessage[] = [{ role: 'user', content: input }];
  for (;;) {
    let turn: Turn;
    if (onDelta) {
      const it = streamModel(scenario, messages);
      let next = await it.next();
      while (!next.done) {
        onDelta(next.value);
        next = await it.next();
      }
      turn = next.value;
    } else turn = await callModel(scenario, messages);
    if (turn.kind === 'text') {
      messages.push({ role: 'assistant', content: turn.text });
      return turn.text;
    }
    messages.push({ role: 'assistant', content: '', calls: turn.calls });
    const results = await Promise.all(turn.calls.map((call) => executeStep(scenario, call.args)));
    turn.calls.forEach((call, i) => {
      messages.push({ role: 'tool', id: call.id, content: results[i] as string });
    });
  }
}

export const floor: Framework = {
  name: 'floor',
  prepare: (scenario) => ({
    run: async (input): Promise<Outcome> => ({ text: await loop(scenario, input), deltas: 0 }),
    stream: async (input): Promise<Outcome> => {
      let deltas = 0;
      const text = await loop(scenario, input, () => {
        deltas++;
      });
      return { text, deltas };
    },
  }),
};
