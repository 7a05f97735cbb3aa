import type { JsonObject } from '../core/json.ts';

/**
 * The strict parser of ReAct replies (tool calls written as text by models without native ones). A reply is either
 *
 *   Thought: <reasoning>            (the label may be left out on the first lines)
 *   Action: <tool name>
 *   Action Input: <one JSON object>
 *
 * or
 *
 *   Thought: <reasoning>
 *   Final Answer: <the answer>
 *
 * Labels count only at the start of a line (leading spaces allowed, any letter case). Anything from an
 * `Observation:` line on is dropped: the model imagining the tool's result is a known habit, and the real
 * result comes from running the tool. Everything else that does not fit (no Action and no Final Answer, both,
 * two Actions, a missing or non-JSON Action Input, an empty answer) is an error with a message written for the
 * model, so it can correct itself.
 */

export type ReactParse =
  | { kind: 'action'; thought: string; tool: string; args: JsonObject }
  | { kind: 'final'; thought: string; answer: string }
  | { kind: 'error'; thought: string; error: string };

type Label = 'thought' | 'action' | 'action input' | 'final answer' | 'observation';

const labelPattern = /^[ \t]*(thought|action input|action|final answer|observation)[ \t]*:[ \t]*/i;

/** A tool name as the providers accept them. */
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;

interface Section {
  label: Label | 'preamble';
  text: string;
}

function sectionsOf(reply: string): Section[] {
  const sections: Section[] = [{ label: 'preamble', text: '' }];
  for (const line of reply.replace(/\r\n?/g, '\n').split('\n')) {
    const match = labelPattern.exec(line);
    if (match) {
      sections.push({ label: (match[1] ?? '').toLowerCase() as Label, text: line.slice(match[0].length) });
    } else {
      const current = sections[sections.length - 1] as Section;
      current.text =
        current.text.length === 0 && current.label === 'preamble' ? line : `${current.text}\n${line}`;
    }
  }
  return sections.map((section) => ({ label: section.label, text: section.text.trim() }));
}

/** A JSON object, allowing one surrounding markdown code fence (```json ... ```), as models often add. */
function parseActionInput(text: string): { ok: true; args: JsonObject } | { ok: false; error: string } {
  const fenced = /^```[A-Za-z]*[ \t]*\n([\s\S]*?)\n?```$/.exec(text);
  const body = (fenced ? (fenced[1] ?? '') : text).trim();
  if (body.length === 0) {
    return {
      ok: false,
      error: 'The Action Input is empty. Give the arguments as one JSON object, {} if none.',
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return {
      ok: false,
      error: `The Action Input is not valid JSON (${(error as Error).message}). Give the arguments as one JSON object.`,
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      error: 'The Action Input must be one JSON object (for example {"x": 1}), not a bare value.',
    };
  }
  return { ok: true, args: value as JsonObject };
}

export function parseReactReply(reply: string): ReactParse {
  let sections = sectionsOf(reply);
  const observation = sections.findIndex((section) => section.label === 'observation');
  if (observation >= 0) sections = sections.slice(0, observation);

  const thought = sections
    .filter((section) => section.label === 'preamble' || section.label === 'thought')
    .map((section) => section.text)
    .filter((text) => text.length > 0)
    .join('\n');
  const actions = sections.filter((section) => section.label === 'action');
  const inputs = sections.filter((section) => section.label === 'action input');
  const finals = sections.filter((section) => section.label === 'final answer');
  const error = (message: string): ReactParse => ({ kind: 'error', thought, error: message });

  if (finals.length > 0 && (actions.length > 0 || inputs.length > 0)) {
    return error('The reply has both an Action and a Final Answer. Give exactly one of them per reply.');
  }
  if (finals.length > 1) return error('The reply has more than one Final Answer. Give exactly one.');
  if (finals.length === 1) {
    const answer = (finals[0] as Section).text;
    if (answer.length === 0)
      return error('The Final Answer is empty. Write the answer after "Final Answer:".');
    return { kind: 'final', thought, answer };
  }
  if (actions.length === 0 && inputs.length === 0) {
    return error(
      'The reply has neither an Action nor a Final Answer. Either call a tool with "Action:" and "Action Input:" lines, or answer with a "Final Answer:" line.',
    );
  }
  if (actions.length > 1 || inputs.length > 1) {
    return error('The reply has more than one Action. Call one tool per reply and wait for its Observation.');
  }
  if (actions.length === 0)
    return error('The reply has an Action Input but no "Action:" line naming the tool.');
  if (inputs.length === 0) {
    return error(
      'The reply has an Action but no "Action Input:" line. Give the arguments as one JSON object.',
    );
  }
  const actionIndex = sections.indexOf(actions[0] as Section);
  const inputIndex = sections.indexOf(inputs[0] as Section);
  if (inputIndex < actionIndex) return error('The "Action Input:" line must come after the "Action:" line.');
  const tool = (actions[0] as Section).text.replace(/^`+|`+$/g, '').trim();
  if (!toolNamePattern.test(tool)) {
    return error(
      `"${tool.slice(0, 80)}" is not a tool name. Put only the tool's name on the "Action:" line, then its arguments on an "Action Input:" line.`,
    );
  }
  const input = parseActionInput((inputs[0] as Section).text);
  if (!input.ok) return error(input.error);
  return { kind: 'action', thought, tool, args: input.args };
}

/**
 * Where the final answer starts in a reply streamed so far, or, while it is not there yet, how much of the text
 * is surely not part of it (a last line that could still become "Final Answer:" is held back).
 */
export function findFinalAnswerStart(
  text: string,
): { markerStart: number; answerStart: number } | { safeEnd: number } {
  const marker = /(^|\n)[ \t]*final answer[ \t]*:[ \t]*\n?/i.exec(text);
  if (marker) {
    const markerStart = marker.index + (marker[1] ?? '').length;
    return { markerStart, answerStart: marker.index + marker[0].length };
  }
  const lastLineStart = text.lastIndexOf('\n') + 1;
  const lastLine = text
    .slice(lastLineStart)
    .replace(/^[ \t]+/, '')
    .toLowerCase();
  const couldBecomeMarker = /^final answer[ \t]*$/.test(lastLine) || 'final answer'.startsWith(lastLine);
  return { safeEnd: couldBecomeMarker ? lastLineStart : text.length };
}
