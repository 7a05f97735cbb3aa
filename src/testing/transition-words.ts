import type { AnyStateNode } from 'xstate';
import { agentMachine } from '../machines/agent.ts';

/**
 * Transitions of the agent statechart named in words, from their source, target, event and guards:
 * `toolUse.callingModel → runningTools on model response with tool calls`.
 */

/** What each event of the agent statechart is, as the words after "on". */
const eventWords: ReadonlyMap<string, string> = new Map([
  ['model.response', 'model response'],
  ['model.error', 'model error'],
  ['model.denied', 'model call denied by the budget'],
  ['guardrail.blocked', 'guardrail block during the model call'],
  ['guardrails.done', 'guardrail verdict'],
  ['tools.done', 'tool results'],
  ['approval.decided', "a person's decision"],
  ['effects.failed', 'failed effects'],
  ['abort', 'abort'],
  ['timeout', 'timeout'],
]);

/** What each guard of the agent statechart asks, as words that follow the event. */
const guardWords: ReadonlyMap<string, string> = new Map([
  ['hasTools', 'with tools'],
  ['checksInput', 'with input guardrails'],
  ['checksOutput', 'with output guardrails'],
  ['guardrailBlocked', 'that blocks'],
  ['toolGuardrailBlocked', 'with a call a tool guardrail blocked'],
  ['resumedAtStepLimit', 'resumed at the step limit'],
  ['stepLimitReached', 'at the step limit'],
  ['finalAnswerOnMaxSteps', 'with finalAnswerOnMaxSteps'],
  ['answersAtToolCallLimit', 'at a tool-call limit with finalAnswerOnToolLimits'],
  ['decidedToRunTools', 'with tool calls'],
  ['handsOff', 'with a handoff'],
  ['resumingTools', 'resuming open tool calls'],
  ['resumingApproval', 'resuming a wait for people'],
  ['resumingFinalOutput', 'resuming the final answer'],
  ['waitsForPeople', 'with calls waiting for people'],
  ['decidesPendingCall', 'on a waiting call'],
  ['decidesLastPendingCall', 'the last one'],
  ['decidedToThink', 'thinking only (no tool calls, no answer)'],
  ['pausedTurnWithinLimit', 'paused within the step limit'],
  ['pausedTurn', 'paused'],
  ['decidedToStop', 'that ends the run'],
  ['decidedToFail', 'that fails the run'],
  ['outputAccepted', 'with an accepted answer'],
  ['modelRefused', 'with a refusal'],
  ['refused', 'after a refusal'],
  ['decoded', 'after the answer decodes'],
  ['decodeRetriesLeft', 'with decode retries left'],
]);

/** The named guards a transition's guard is made of (`and([...])` guards are functions holding their parts). */
export function guardNames(guard: unknown): string[] {
  if (typeof guard === 'string') return [guard];
  if (typeof guard === 'function' && 'guards' in guard && Array.isArray(guard.guards))
    return guard.guards.flatMap(guardNames);
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return [String(guard.type)];
  return [];
}

/** A stable id for a transition of the definition: source state, event, position among its siblings. */
export function transitionId(source: { readonly id: string }, eventType: string, index: number): string {
  return `${source.id} --${eventType}[${index}]`;
}

/** The source, event and position a transition id names (the inverse of `transitionId`). */
function parseTransitionId(id: string): { source: string; eventType: string; index: number } | undefined {
  const match = /^(\S+) --(\S*)\[(\d+)\]$/.exec(id);
  if (!match) return undefined;
  return { source: match[1] as string, eventType: match[2] as string, index: Number(match[3]) };
}

interface TransitionShape {
  guard?: unknown;
  target?: readonly AnyStateNode[] | undefined;
}

function nodeById(root: AnyStateNode, id: string): AnyStateNode | undefined {
  if (root.id === id) return root;
  for (const child of Object.values(root.states)) {
    const found = nodeById(child, id);
    if (found) return found;
  }
  return undefined;
}

function stateIdsOf(node: AnyStateNode): string[] {
  return [node.id, ...Object.values(node.states).flatMap(stateIdsOf)];
}

/** A state's shortest unambiguous name: the end of its id that no other state's id ends with. */
export function shortStateName(id: string, root: AnyStateNode = agentMachine.root): string {
  const others = stateIdsOf(root).filter((other) => other !== id);
  const parts = id.split('.');
  for (let take = 1; take < parts.length; take++) {
    const suffix = parts.slice(-take).join('.');
    if (!others.some((other) => other === suffix || other.endsWith(`.${suffix}`))) return suffix;
  }
  return id;
}

/**
 * A transition of the agent statechart in words, from its id: `source → target on event with guard`. An eventless
 * transition says only its guards; one without a guard after guarded siblings says `otherwise`.
 */
export function transitionWords(id: string, root: AnyStateNode = agentMachine.root): string {
  const parsed = parseTransitionId(id);
  const source = parsed && nodeById(root, parsed.source);
  if (!parsed || !source) return id;
  const list = (
    parsed.eventType === '' ? (source.always ?? []) : (source.transitions.get(parsed.eventType) ?? [])
  ) as readonly TransitionShape[];
  const transition = list[parsed.index];
  if (!transition) return id;
  const from = shortStateName(source.id, root);
  const targets = (transition.target ?? []).map((node) => shortStateName(node.id, root));
  const move = targets.length > 0 ? `${from} → ${targets.join(', ')}` : `${from} stays`;
  const event = parsed.eventType === '' ? [] : [`on ${eventWords.get(parsed.eventType) ?? parsed.eventType}`];
  const guards = guardNames(transition.guard).map((name) => guardWords.get(name) ?? camelWords(name));
  const condition = guards.length > 0 ? guards : parsed.index > 0 ? ['otherwise'] : [];
  return [move, ...event, condition.join(' and ')].filter((part) => part !== '').join(' ');
}

function camelWords(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
