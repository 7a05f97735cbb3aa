import { installedXStateVersion, verifiedXStateVersions } from './xstate-version.ts';

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
}

/**
 * The interpreter for a setting of TROUPE_INTERPRETER and the installed xstate version (undefined when it could not
 * be read). `xstate` chooses XState's interpreter; otherwise the compiled one runs only on a verified xstate version,
 * and any other version, or one that cannot be read, runs on XState's interpreter, with a warning. The compiled
 * interpreter follows XState's internal algorithm, which a release may change: trusting an unknown version could
 * silently run machines differently (stop children XState keeps running, for one), where XState's interpreter is
 * only slower.
 */
export function chooseInterpreter(
  setting: string | undefined,
  version: string | undefined,
): InterpreterChoice {
  const warnings: InterpreterWarning[] = [];
  if (setting === 'xstate') return { interpreter: 'xstate', warnings };
  if (setting !== undefined && setting !== '' && setting !== 'compiled')
    warnings.push({
      code: 'TROUPE_INTERPRETER',
      message: `${interpreterVariable} is '${setting}'; it takes 'compiled' (the default) or 'xstate'. Using the default.`,
    });
  if (version !== undefined && verifiedXStateVersions.includes(version))
    return { interpreter: 'compiled', warnings };
  const found =
    version === undefined
      ? 'the version of the installed xstate could not be read'
      : `xstate ${version} is installed`;
  warnings.push({
    code: 'TROUPE_XSTATE_VERSION',
    message:
      `Troupe's compiled interpreter is verified on xstate ${verifiedXStateVersions.join(', ')}, but ${found}: ` +
      `Troupe's machines run on XState's own interpreter (same behaviour, slower). Install xstate ` +
      `${verifiedXStateVersions.at(-1)} to run them compiled, or set ${interpreterVariable}=xstate to choose ` +
      `XState's interpreter without this warning.`,
  });
  return { interpreter: 'xstate', warnings };
}

/** Set on globalThis once the process chose, so that two copies of Troupe in one process warn once. */
const warnedKey = Symbol.for('troupe.interpreter.warned');

let chosen: Interpreter | undefined;

/**
 * The interpreter of this process, chosen at the first call from TROUPE_INTERPRETER and the installed xstate; its
 * warnings are emitted then, once per process.
 */
export function processInterpreter(): Interpreter {
  if (chosen !== undefined) return chosen;
  const choice = chooseInterpreter(process.env[interpreterVariable], installedXStateVersion());
  chosen = choice.interpreter;
  const global = globalThis as { [warnedKey]?: boolean };
  if (!global[warnedKey]) {
    global[warnedKey] = true;
    for (const warning of choice.warnings) process.emitWarning(warning.message, { code: warning.code });
  }
  return chosen;
}
