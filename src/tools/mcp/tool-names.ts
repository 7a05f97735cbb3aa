import { isPrototypeName } from '../../core/records.ts';

const maxLength = 64;

/**
 * The name the model sees for a server's tool: `prefix` + the server's name, with every character the strictest
 * provider refuses (anything but letters, digits, `_` and `-`) replaced by `_`, cut to 64 characters. A name
 * JavaScript objects already carry (`constructor`) gets a trailing `_`.
 */
export function exposedToolName(prefix: string, serverName: string): string {
  let name = `${prefix}${serverName}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, maxLength);
  if (name === '') name = '_';
  if (isPrototypeName(name)) name = `${name.slice(0, maxLength - 1)}_`;
  return name;
}
