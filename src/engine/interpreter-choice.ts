import type { RuntimeVerdict } from './runtime-gate.ts';
import { installedXStateVersion } from './xstate-version.ts';

/** Who computes the transitions of Troupe's machines: the compiled interpreter or XState's own. */
export type Interpreter = 'compiled' | 'xstate';

/** The environment variable that selects the interpreter: `xstate` runs every machine on XState's own. */
export const interpreterVariable = 'TROUPE_INTERPRETER';

export interface InterpreterWarning {
  code: string;
  message: string;
}

export interface InterpreterChoice {
  interpreter: Interpreter;
  /** What the process is told about the choice (process.emitWarning), once. */
  warnings: InterpreterWarning[];
  /** Why this interpreter, in a sentence. */
  reason: string;
  /** The runtime check's verdict; absent when TROUPE_INTERPRETER=xstate made the check needless. */
  verdict?: RuntimeVerdict;
}

/** The interpreter this process runs Troupe's machines on, and why (`interpreterStatus()` of the package). */
export interface InterpreterStatus {
  interpreter: Interpreter;
  /** Why this interpreter, in a sentence. */
  reason: string;
  /** What the runtime check found wrong with the loaded xstate (empty when it passed or did not run). */
  problems: string[];
  /** How long the runtime check took, in microseconds (undefined when it did not run). */
  checkMicros: number | undefined;
  /** The version in the package.json of the xstate resolved from Troupe, for the record (the check does not read it). */
  xstateVersion: string | undefined;
}

/**
 * The interpreter for a setting of TROUPE_INTERPRETER and the verdict of the runtime check (runtime-gate.ts), which
 * runs only when it decides something: `xstate` chooses XState's interpreter without it. Otherwise the compiled one
 * runs only when the loaded xstate passed the check; when it did not, machines run on XState's interpreter (same
 * behaviour, slower), with a warning naming what differed. The compiled interpreter follows XState's internal
 * algorithm, which a release may change: trusting a runtime that differs could silently run machines differently
 * (stop children XState keeps running, for one), where XState's interpreter is only slower.
 */
export function chooseInterpreter(
  setting: string | undefined,
  assess: () => RuntimeVerdict,
): InterpreterChoice {
  const warnings: InterpreterWarning[] = [];
  if (setting === 'xstate')
    return { interpreter: 'xstate', warnings, reason: `${interpreterVariable}=xstate` };
  if (setting !== undefined && setting !== '' && setting !== 'compiled')
    warnings.push({
      code: 'TROUPE_INTERPRETER',
      message: `${interpreterVariable} is '${setting}'; it takes 'compiled' (the default) or 'xstate'. Using the default.`,
    });
  const verdict = assess();
  if (verdict.accepted)
    return {
      interpreter: 'compiled',
      warnings,
      verdict,
      reason: 'the loaded xstate has the members the compiled interpreter uses and ran the canary alike',
    };
  const reason = `the loaded xstate failed the compiled interpreter's check: ${verdict.problems.join('; ')}`;
  warnings.push({
    code: 'TROUPE_XSTATE_RUNTIME',
    message:
      `${reason}. Troupe's machines run on XState's own interpreter (same behaviour, slower). ` +
      `Set ${interpreterVariable}=xstate to choose XState's interpreter without this warning.`,
  });
  return { interpreter: 'xstate', warnings, verdict, reason };
}

/** Set on globalThis once the process chose, so that two copies of Troupe in one process warn once. */
const warnedKey = Symbol.for('troupe.interpreter.warned');

let chosen: InterpreterStatus | undefined;

/**
 * The interpreter of this process, chosen at the first call from TROUPE_INTERPRETER and, unless that says `xstate`,
 * the runtime check `assess` (run then, once per process); the choice's warnings are emitted then, once per process.
 */
export function processInterpreter(assess: () => RuntimeVerdict): Interpreter {
  if (chosen !== undefined) return chosen.interpreter;
  const choice = chooseInterpreter(process.env[interpreterVariable], assess);
  chosen = {
    interpreter: choice.interpreter,
    reason: choice.reason,
    problems: choice.verdict?.problems ?? [],
    checkMicros: choice.verdict?.costMicros,
    xstateVersion: installedXStateVersion(),
  };
  const global = globalThis as { [warnedKey]?: boolean };
  if (!global[warnedKey]) {
    global[warnedKey] = true;
    for (const warning of choice.warnings) process.emitWarning(warning.message, { code: warning.code });
  }
  return chosen.interpreter;
}

/** The choice of this process, once made (at the first machine compiled); undefined before. */
export function chosenInterpreter(): InterpreterStatus | undefined {
  return chosen;
}
