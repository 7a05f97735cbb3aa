import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * `troupe/restate` needs the optional peer `@restatedev/restate-sdk`. A fresh Node process with a module hook that
 * makes the SDK unresolvable (exactly as when it is not installed) imports the entry point.
 */

const restateEntry = fileURLToPath(new URL('../../src/restate/index.ts', import.meta.url));

const hooks = `
import { registerHooks } from 'node:module';
const blocked = process.env.TROUPE_BLOCK_PACKAGE;
registerHooks({
  resolve(specifier, context, next) {
    if (blocked && (specifier === blocked || specifier.startsWith(blocked + '/'))) {
      const error = new Error("Cannot find package '" + blocked + "'");
      error.code = 'ERR_MODULE_NOT_FOUND';
      throw error;
    }
    return next(specifier, context);
  },
});
`;

function importEntry(
  blocked: string,
): { name: string; code: unknown; message: string } | { exports: string[] } {
  const script = `
let out;
try { out = { exports: Object.keys(await import(${JSON.stringify(restateEntry)})).sort() }; }
catch (error) { out = { name: error.name, code: error.code, message: error.message }; }
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
    { encoding: 'utf8', env: { ...process.env, TROUPE_BLOCK_PACKAGE: blocked }, timeout: 60_000 },
  );
  if (child.status !== 0) throw new Error(`probe failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as { name: string; code: unknown; message: string } | { exports: string[] };
}

describe('troupe/restate without its SDK', () => {
  it('importing it fails with a ConfigError naming the package and its install command', () => {
    const result = importEntry('@restatedev/restate-sdk');
    expect(result).toMatchObject({ name: 'ConfigError', code: 'config_invalid' });
    expect((result as { message: string }).message).toContain('"@restatedev/restate-sdk"');
    expect((result as { message: string }).message).toContain('npm install @restatedev/restate-sdk');
  });

  it('with the SDK installed, the entry point exports what it did', () => {
    expect(importEntry('troupe-test-no-such-package')).toEqual({
      exports: ['RestateRequestError', 'restateAgents', 'restateClient', 'serveAgents'],
    });
  });
});
