/**
 * The one logical workload every framework runs: a scripted model whose every turn is a pure function of how many
 * tool results the conversation already holds, and one tool. Because the turn is derived from the conversation
 * (not from a per-agent counter), any number of concurrent runs can share one model object, as real clients do.
 */

export interface Scenario {
  /** Model turns that ask for tools before the final answer. */
  toolSteps: number;
  /** Tool calls per such turn (run in parallel by the framework when it can). */
  toolsPerTurn: number;
  /** Latency of every model call, in ms (0: answers without touching a timer). */
  modelDelayMs: number;
  /** Latency of every tool execution, in ms. */
  toolDelayMs: number;
  /** The final answer is streamed in this many text deltas (0: one whole text). */
  deltas: number;
}

/** What a run returned, in framework-neutral terms, for the assertions. */
export interface Outcome {
  text: string;
  /** Text deltas the consumer saw (streaming runs only). */
  deltas: number;
}

export type Turn =
  | { kind: 'tools'; calls: { id: string; name: string; args: { step: number; k: number } }[] }
  | { kind: 'text'; text: string; pieces: string[] };

export const toolName = 'step';
export const toolDescription = 'Performs one step of the task.';
export const piece = 'tok ';

/** The model's decision given the number of tool results already in the conversation. */
export function nextTurn(scenario: Scenario, toolResults: number): Turn {
  const turn = Math.floor(toolResults / scenario.toolsPerTurn);
  if (turn < scenario.toolSteps) {
    const calls = [];
    for (let k = 0; k < scenario.toolsPerTurn; k++) {
      calls.push({ id: `call_${turn}_${k}`, name: toolName, args: { step: turn, k } });
    }
    return { kind: 'tools', calls };
  }
  if (scenario.deltas > 0) {
    const pieces = new Array<string>(scenario.deltas).fill(piece);
    return { kind: 'text', text: pieces.join(''), pieces };
  }
  return { kind: 'text', text: expectedAnswer(scenario), pieces: [] };
}

/** The final text of a non-streaming run: proves the model saw every tool result. */
export function expectedAnswer(scenario: Scenario): string {
  return `done after ${scenario.toolSteps * scenario.toolsPerTurn} tool results`;
}

export function expectedText(scenario: Scenario): string {
  return scenario.deltas > 0 ? piece.repeat(scenario.deltas) : expectedAnswer(scenario);
}

/** Tool executions across all runs of this process: the assertion that each framework really ran the tools. */
export const toolCounter = { executions: 0 };

/** The tool's body, the same for every framework. */
export async function executeStep(scenario: Scenario, args: { step: number; k: number }): Promise<string> {
  toolCounter.executions++;
  if (scenario.toolDelayMs > 0) await sleep(scenario.toolDelayMs);
  return `ok ${args.step}.${args.k}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Awaited by every model before answering: a real timer when the scenario has latency, nothing otherwise. */
export function modelLatency(scenario: Scenario): Promise<void> | undefined {
  return scenario.modelDelayMs > 0 ? sleep(scenario.modelDelayMs) : undefined;
}

/** Hooks the harness installs to observe model calls (W2 measures memory when every run is in flight). */
export const modelHooks: { onCall: (() => void) | undefined } = { onCall: undefined };

export function check(scenario: Scenario, outcome: Outcome, framework: string): void {
  const want = expectedText(scenario);
  if (outcome.text !== want) {
    throw new Error(
      `${framework}: wrong answer ${JSON.stringify(outcome.text.slice(0, 80))}, want ${JSON.stringify(want.slice(0, 80))}`,
    );
  }
  if (scenario.deltas > 0 && outcome.deltas !== scenario.deltas) {
    throw new Error(`${framework}: saw ${outcome.deltas} text deltas, want ${scenario.deltas}`);
  }
}

/** A framework under test: `prepare` builds the agent once; the runner is then called many times. */
export interface Framework {
  name: string;
  prepare(scenario: Scenario): Promise<Runner> | Runner;
}

export interface Runner {
  /** One whole run; resolves with the final text. */
  run(input: string): Promise<Outcome>;
  /** One streamed run; counts the text deltas the consumer receives. */
  stream(input: string): Promise<Outcome>;
}
