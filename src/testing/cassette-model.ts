import { existsSync } from 'node:fs';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider } from '../core/model.ts';
import { type RecordingModel, recordingModel } from './recording-model.ts';
import { type ReplayModel, type ReplayModelOptions, replayModel } from './replay-model.ts';

/** `record`: call the real provider and write the cassette. `replay`: play the file. `auto`: replay if it exists. */
export type CassetteMode = 'record' | 'replay' | 'auto';

/** The environment variable that picks the mode when the options do not: `TROUPE_CASSETTES=record`. */
export const cassetteModeVariable = 'TROUPE_CASSETTES';

export interface CassetteModelOptions extends ReplayModelOptions {
  /** Default: the TROUPE_CASSETTES environment variable, else `auto`. */
  mode?: CassetteMode | undefined;
}

export type CassetteModel =
  | (RecordingModel & { readonly mode: 'record' })
  | (ReplayModel & { readonly mode: 'replay' });

/**
 * A model for tests that talk to a real provider once: in `auto` mode (the default) it replays the cassette at
 * `path` when the file exists, and records one through `realProvider` when it does not. `TROUPE_CASSETTES=record`
 * records again (a real provider is then required), `TROUPE_CASSETTES=replay` never calls the provider (a missing
 * file is an error, which is what CI wants). Without a provider, only replay is possible.
 */
export function cassetteModel(
  path: string,
  realProvider?: ModelProvider,
  options: CassetteModelOptions = {},
): CassetteModel {
  const mode = options.mode ?? modeFromEnvironment();
  const exists = existsSync(path);
  const record = mode === 'record' || (mode === 'auto' && !exists);
  if (record) {
    if (realProvider === undefined)
      throw new ConfigError(
        mode === 'record'
          ? `cassetteModel(${JSON.stringify(path)}): recording (${cassetteModeVariable}=record) needs the real provider as the second argument.`
          : `cassetteModel(${JSON.stringify(path)}): the cassette does not exist and no real provider was given to record it.`,
      );
    const recording = recordingModel(realProvider, { ...options, cassette: path });
    return Object.assign(recording, { mode: 'record' as const });
  }
  if (!exists)
    throw new ConfigError(
      `cassetteModel(${JSON.stringify(path)}): the cassette does not exist and ${cassetteModeVariable}=replay forbids recording it.`,
    );
  return Object.assign(replayModel(path, options), { mode: 'replay' as const });
}

function modeFromEnvironment(): CassetteMode {
  const value = process.env[cassetteModeVariable];
  if (value === undefined || value === '') return 'auto';
  if (value === 'record' || value === 'replay' || value === 'auto') return value;
  throw new ConfigError(
    `${cassetteModeVariable} must be record, replay or auto, got ${JSON.stringify(value)}.`,
  );
}
