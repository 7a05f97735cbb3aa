import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMachine } from 'xstate';
import { chooseInterpreter } from '../../src/engine/interpreter-choice.ts';
import { installedXStateVersion, verifiedXStateVersions } from '../../src/engine/xstate-version.ts';

/**
 * The version gate: the compiled interpreter runs only on the xstate versions it was verified against; any other
 * version, one that cannot be read, or TROUPE_INTERPRETER=xstate runs the machines on XState's own interpreter.
 */

const verified = verifiedXStateVersions[0] as string;

describe('installedXStateVersion()', () => {
  it('reads the version of the xstate this project installs, which is a verified one', () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../../node_modules/xstate/package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(installedXStateVersion()).toBe(manifest.version);
    expect(verifiedXStateVersions).toContain(manifest.version);
  });

  it('is the version the package depends on, exactly', () => {
    const ours = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(verifiedXStateVersions).toContain(ours.dependencies.xstate);
  });
});

describe('chooseInterpreter(setting, version)', () => {
  it('compiles on a verified version, without a word', () => {
    expect(chooseInterpreter(undefined, verified)).toEqual({ interpreter: 'compiled', warnings: [] });
    expect(chooseInterpreter('', verified)).toEqual({ interpreter: 'compiled', warnings: [] });
    expect(chooseInterpreter('compiled', verified)).toEqual({ interpreter: 'compiled', warnings: [] });
  });

  it('runs on XState on another version, with a warning naming both versions', () => {
    for (const version of ['5.33.2', '5.34.0', '6.0.0']) {
      const choice = chooseInterpreter(undefined, version);
      expect(choice.interpreter).toBe('xstate');
      expect(choice.warnings).toHaveLength(1);
      const [warning] = choice.warnings;
      expect(warning?.code).toBe('TROUPE_XSTATE_VERSION');
      expect(warning?.message).toContain(`xstate ${version} is installed`);
      expect(warning?.message).toContain(`verified on xstate ${verified}`);
      expect(warning?.message).toContain("run on XState's own interpreter");
    }
  });

  it('runs on XState when the version cannot be read, and says so', () => {
    const choice = chooseInterpreter(undefined, undefined);
    expect(choice.interpreter).toBe('xstate');
    expect(choice.warnings.map((warning) => warning.code)).toEqual(['TROUPE_XSTATE_VERSION']);
    expect(choice.warnings[0]?.message).toContain('could not be read');
  });

  it("TROUPE_INTERPRETER=xstate chooses XState's interpreter on any version, without a warning", () => {
    expect(chooseInterpreter('xstate', verified)).toEqual({ interpreter: 'xstate', warnings: [] });
    expect(chooseInterpreter('xstate', '5.33.2')).toEqual({ interpreter: 'xstate', warnings: [] });
    expect(chooseInterpreter('xstate', undefined)).toEqual({ interpreter: 'xstate', warnings: [] });
  });

  it('an unknown setting is warned about and the default applies', () => {
    const choice = chooseInterpreter('fast', verified);
    expect(choice.interpreter).toBe('compiled');
    expect(choice.warnings.map((warning) => warning.code)).toEqual(['TROUPE_INTERPRETER']);
    expect(choice.warnings[0]?.message).toContain("'fast'");
  });
});

describe('compileMachine on an unverified xstate', () => {
  afterEach(() => {
    vi.doUnmock('../../src/engine/xstate-version.ts');
    vi.resetModules();
    vi.restoreAllMocks();
  });

  /** compileMachine and isCompiledMachine of a fresh copy of the engine that reads `version` as installed. */
  async function engineSeeing(version: string | undefined) {
    vi.resetModules();
    vi.doMock('../../src/engine/xstate-version.ts', async (importOriginal) => ({
      ...(await importOriginal<typeof import('../../src/engine/xstate-version.ts')>()),
      installedXStateVersion: () => version,
    }));
    return import('../../src/engine/compiled-machine.ts');
  }

  const machine = (id: string) => createMachine({ id, initial: 'a', states: { a: {} } });

  it('returns the machine unchanged and warns once per process, whatever it compiles', async () => {
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const warnedKey = Symbol.for('troupe.interpreter.warned');
    const global = globalThis as { [warnedKey]?: boolean };
    const before = global[warnedKey];
    delete global[warnedKey];
    try {
      const engine = await engineSeeing('5.33.2');
      const first = machine('first');
      const second = machine('second');
      expect(engine.compileMachine(first)).toBe(first);
      expect(engine.compileMachine(second)).toBe(second);
      expect(engine.isCompiledMachine(engine.compileMachine(first))).toBe(false);
      // A second copy of the engine in the same process (a bundle beside the package) does not warn again.
      const copy = await engineSeeing('5.33.2');
      expect(copy.compileMachine(first)).toBe(first);
      expect(emitted).toHaveBeenCalledTimes(1);
      const [message, options] = emitted.mock.calls[0] as [string, { code: string }];
      expect(options.code).toBe('TROUPE_XSTATE_VERSION');
      expect(message).toContain('xstate 5.33.2 is installed');
      expect(message).toContain(verified);
    } finally {
      if (before === undefined) delete global[warnedKey];
      else global[warnedKey] = before;
    }
  });

  it('still refuses a machine with parallel states (the same machines are accepted on every version)', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const engine = await engineSeeing('5.33.2');
    const parallel = createMachine({ id: 'p', type: 'parallel', states: { x: {}, y: {} } });
    expect(() => engine.compileMachine(parallel)).toThrow(/parallel/);
  });

  it('compiles on the verified version, without a warning', async () => {
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const engine = await engineSeeing(verified);
    const compiled = engine.compileMachine(machine('verified'));
    expect(engine.isCompiledMachine(compiled)).toBe(true);
    expect(emitted).not.toHaveBeenCalled();
  });
});

describe('installedXStateVersion(from) on installed layouts', () => {
  let project: string;
  beforeEach(() => {
    project = mkdtempSync(join(tmpdir(), 'troupe-xstate-version-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0' }));
  });
  afterEach(() => rmSync(project, { recursive: true, force: true }));

  /** An installed xstate package of this version, with these exports. */
  function installXState(version: string, exports: Record<string, string>): void {
    const dist = join(project, 'node_modules', 'xstate', 'dist');
    mkdirSync(dist, { recursive: true });
    writeFileSync(join(dist, 'xstate.cjs.js'), 'module.exports = {};');
    // A nameless package.json inside the package (it only sets the module type) is not the package's own.
    writeFileSync(join(dist, 'package.json'), JSON.stringify({ type: 'commonjs' }));
    writeFileSync(
      join(project, 'node_modules', 'xstate', 'package.json'),
      JSON.stringify({ name: 'xstate', version, main: './dist/xstate.cjs.js', exports }),
    );
  }

  const from = () => pathToFileURL(join(project, 'index.js'));

  it('reads the version from the package.json xstate exports', () => {
    installXState('5.33.2', { '.': './dist/xstate.cjs.js', './package.json': './package.json' });
    expect(installedXStateVersion(from())).toBe('5.33.2');
  });

  it("finds it from xstate's entry point when xstate does not export its package.json", () => {
    installXState('5.40.1', { '.': './dist/xstate.cjs.js' });
    expect(installedXStateVersion(from())).toBe('5.40.1');
  });

  it('is undefined when no xstate can be resolved (a bundle that inlined it)', () => {
    expect(installedXStateVersion(from())).toBeUndefined();
    expect(chooseInterpreter(undefined, installedXStateVersion(from())).interpreter).toBe('xstate');
  });
});
