import { ConfigError } from './errors.ts';
import { type JsonObject, plainJsonProblem } from './json.ts';
import type { ModelSettings } from './model.ts';
import { checkOptionObject, describeValue, isPlainObject } from './options.ts';

const settingKeys: readonly (keyof ModelSettings)[] = [
  'maxOutputTokens',
  'temperature',
  'topP',
  'stopSequences',
  'providerOptions',
];

/**
 * A checked copy of model settings: an object with known keys only (a misspelled key would be dropped without a
 * word), each field of the right type. Throws a ConfigError otherwise, at definition time.
 */
export function checkModelSettings(settings: unknown, where: string): ModelSettings {
  if (settings === undefined) return {};
  checkOptionObject(settings, settingKeys, `${where}: settings`);
  const { maxOutputTokens, temperature, topP, stopSequences, providerOptions } = settings;
  const wrong = (key: string, what: string, value: unknown): never => {
    throw new ConfigError(`${where}: settings.${key} must be ${what}, got ${describeValue(value)}.`);
  };
  if (
    maxOutputTokens !== undefined &&
    (typeof maxOutputTokens !== 'number' || !Number.isInteger(maxOutputTokens) || maxOutputTokens < 1)
  )
    wrong('maxOutputTokens', 'an integer >= 1', maxOutputTokens);
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))
  )
    wrong('temperature', 'a number from 0 to 2', temperature);
  if (topP !== undefined && (typeof topP !== 'number' || !(topP >= 0 && topP <= 1)))
    wrong('topP', 'a number from 0 to 1', topP);
  if (
    stopSequences !== undefined &&
    (!Array.isArray(stopSequences) || stopSequences.some((stop) => typeof stop !== 'string' || stop === ''))
  )
    wrong('stopSequences', 'an array of non-empty strings', stopSequences);
  if (providerOptions !== undefined) {
    const problem = isPlainObject(providerOptions)
      ? plainJsonProblem(providerOptions)
      : 'it is not an object';
    if (problem !== undefined)
      throw new ConfigError(`${where}: settings.providerOptions must be a plain JSON object: ${problem}.`);
  }
  const checked: ModelSettings = {};
  if (maxOutputTokens !== undefined) checked.maxOutputTokens = maxOutputTokens as number;
  if (temperature !== undefined) checked.temperature = temperature as number;
  if (topP !== undefined) checked.topP = topP as number;
  if (stopSequences !== undefined) checked.stopSequences = [...(stopSequences as string[])];
  if (providerOptions !== undefined) checked.providerOptions = providerOptions as JsonObject;
  return checked;
}
