import type { GuardrailStage } from '../core/events.ts';
import type { AgentGuardrails, Guardrail, GuardrailCheck } from '../guardrails/guardrail.ts';

/** What a path's guardrail step makes the guardrail it names decide. */
export type PathGuardrailDecision = 'allow' | 'block';

/** What a guardrail does on a path's run: as scripted, or wait for the run's abort (the caller aborts the check). */
export type PathGuardrailAction = PathGuardrailDecision | 'wait-for-abort';

/** The message of every block a path scripts. */
export const pathBlockMessage = 'blocked on the path';

/**
 * An agent's guardrails for a path's run: each checks as it does, except when `take` (asked with the stage, the
 * guardrail's name and whether it is a whole-input or whole-answer check) answers what the path scripts for it: a
 * scripted block blocks without running the check, a scripted allow runs the real check (an allow path shows that
 * the agent's own guardrails let the run through), and a check the caller aborts waits for the abort.
 */
export function pathGuardrails(
  guardrails: AgentGuardrails,
  take: (stage: GuardrailStage, name: string, whole: boolean) => PathGuardrailAction | undefined,
): AgentGuardrails {
  const wrap = (list: readonly Guardrail[], whole = false) =>
    list.map(
      (guardrail): Guardrail =>
        Object.freeze({
          ...guardrail,
          check: ((value, info) => {
            const action = take(info.stage, guardrail.name, whole);
            if (action === 'block') return { decision: 'block', message: pathBlockMessage };
            if (action === 'wait-for-abort')
              return new Promise((resolve) =>
                info.signal.addEventListener('abort', () => resolve({ decision: 'allow' }), { once: true }),
              );
            return guardrail.check(value, info);
          }) satisfies GuardrailCheck,
        }),
    );
  return Object.freeze({
    input: wrap(guardrails.input, true),
    parallelInput: wrap(guardrails.parallelInput),
    output: wrap(guardrails.output, true),
    streamingOutput: wrap(guardrails.streamingOutput),
    toolInput: wrap(guardrails.toolInput),
    toolOutput: wrap(guardrails.toolOutput),
  });
}
