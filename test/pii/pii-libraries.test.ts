import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The validation libraries are optional peer dependencies. These tests run a fresh Node process with a module hook
 * that makes the named packages unresolvable, exactly as when they are not installed, then check the `pii` options.
 */

const optionsEntry = fileURLToPath(new URL('../../src/pii/pii-options.ts', import.meta.url));

const hooks = `
import { registerHooks } from 'node:module';
const blocked = (process.env.TROUPE_BLOCK_PACKAGES ?? '').split(',').filter(Boolean);
registerHooks({
  resolve(specifier, context, next) {
    const pkg = blocked.find((name) => specifier === name || specifier.startsWith(name + '/'));
    if (pkg !== undefined) {
      const error = new Error("Cannot find package '" + pkg + "'");
      error.code = 'ERR_MODULE_NOT_FOUND';
      throw error;
    }
    return next(specifier, context);
  },
});
`;

/** Resolves `pii` options in a fresh process without the `blocked` packages: the error's name and message, or null. */
function resolveWithout(blocked: string[], kinds?: string[]): { name: string; message: string } | null {
  const script = `
const { resolvePii } = await import(${JSON.stringify(optionsEntry)});
let out = null;
try { resolvePii(${JSON.stringify(kinds === undefined ? {} : { kinds })}, 'run()'); }
catch (error) { out = { name: error.name, message: error.message }; }
process.stdout.write(JSON.stringify(out));
`;
  const child = spawnSync(
    process.execPath,
    [
      '--experimental-transform-types',
      '--no-warnings',
      '--import',
      `data:text/javascript,${encodeURIComponent(hooks)}`,
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8', env: { ...process.env, TROUPE_BLOCK_PACKAGES: blocked.join(',') }, timeout: 60_000 },
  );
  if (child.status !== 0) throw new Error(`probe failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as { name: string; message: string } | null;
}

describe('pii options and the validation libraries', () => {
  it('names every missing library in one ConfigError, with one install command', () => {
    const error = resolveWithout(['libphonenumber-js', 'card-validator', 'ibantools']);
    expect(error?.name).toBe('ConfigError');
    expect(error?.message).toContain('"libphonenumber-js" (phone)');
    expect(error?.message).toContain('"ibantools" (iban)');
    expect(error?.message).toContain('"card-validator" (card)');
    expect(error?.message).toContain('npm install libphonenumber-js ibantools card-validator');
  });

  it('asks only for the libraries the chosen kinds need', () => {
    const error = resolveWithout(['libphonenumber-js', 'card-validator', 'ibantools'], ['email', 'card']);
    expect(error?.name).toBe('ConfigError');
    expect(error?.message).toContain('npm install card-validator`');
    expect(error?.message).not.toContain('ibantools');
    expect(resolveWithout(['libphonenumber-js', 'ibantools'], ['email', 'card'])).toBeNull();
    expect(resolveWithout([])).toBeNull();
  });
});
