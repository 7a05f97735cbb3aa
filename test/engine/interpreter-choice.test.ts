import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMachine } from 'xstate';
import { chooseInterpreter } from '../../src/engine/interpreter-choice.ts';
import type { RuntimeVerdict } from '../../src/engine/runtime-gate.ts';
import { installedXStateVersion } from '../../src/engine/xstate-version.ts';

/**
 * The choice of interpreter: the compiled one runs only when the loaded xstate passes the runtime check; a runtime
 * that fails it, or TROUPE_INTERPRETER=xstate, runs the machines on XState's own interpreter.
 */

describe('installedXStateVersion()', () => {
  it('reads the version of the xstate this project installs', () => {
    const manifest = JSON.parse(
      readFileSync(createRequire(import.meta.url).resolve('xstate/package.json'), 'utf8'),
    ) as { version: string };
    expect(installedXStateVersion()).toBe(manifest.version);
  });
});

const passed = (): RuntimeVerdict => ({ accepted: true, problems: [], costMicros: 1 });
const failed = (): RuntimeVerdict => ({
  accepted: false,
  problems: ['xstate no longer has system._relay (a function)'],
  costMicros: 1,
});

describe('chooseInterpreter(setting, assess)', () => {
  it('compiles when the loaded xstate passes the check, without a word', () => {
    for (const setting of [undefined, '', 'compiled']) {
      const choice = chooseInterpreter(setting, passed);
      expect(choice.interpreter).toBe('compiled');
      expect(choice.warnings).toEqual([]);
      expect(choice.verdict?.accepted).toBe(true);
    }
  });

  it('runs on XState when the check fails, with a warning naming what it found', () => {
    const choice = chooseInterpreter(undefined, failed);
    expect(choice.interpreter).toBe('xstate');
    expect(choice.warnings.map((warning) => warning.code)).toEqual(['TROUPE_XSTATE_RUNTIME']);
    expect(choice.warnings[0]?.message).toContain('system._relay');
    expect(choice.warnings[0]?.message).toContain("run on XState's own interpreter");
    expect(choice.reason).toContain('system._relay');
  });

  it("TROUPE_INTERPRETER=xstate chooses XState's interpreter without running the check or warning", () => {
    const assess = vi.fn(passed);
    const choice = chooseInterpreter('xstate', assess);
    expect(choice).toEqual({ interpreter: 'xstate', warnings: [], reason: 'TROUPE_INTERPRETER=xstate' });
    expect(assess).not.toHaveBeenCalled();
  });

  it('an unknown setting is warned about and the default applies', () => {
    const choice = chooseInterpreter('fast', passed);
    expect(choice.interpreter).toBe('compiled');
    expect(choice.warnings.map((warning) => warning.code)).toEqual(['TROUPE_INTERPRETER']);
    expect(choice.warnings[0]?.message).toContain("'fast'");
  });
});

describe('compileMachine on a loaded xstate of another shape', () => {
  const savedSetting = process.env.TROUPE_INTERPRETER;
  beforeEach(() => {
    delete process.env.TROUPE_INTERPRETER;
  });
  afterEach(() => {
    if (savedSetting === undefined) delete process.env.TROUPE_INTERPRETER;
    else process.env.TROUPE_INTERPRETER = savedSetting;
    vi.doUnmock('xstate');
    vi.resetModules();
    vi.restoreAllMocks();
  });

  /** A fresh copy of the engine that loads xstate with every actor's system changed by `change`. */
  async function engineOn(change: (actor: Record<string, unknown>) => void) {
    vi.resetModules();
    vi.doMock('xstate', async (importOriginal) => {
      const original = await importOriginal<typeof import('xstate')>();
      return {
        ...original,
        createActor: (...args: Parameters<typeof original.createActor>) => {
          const actor = original.createActor(...args);
          change(actor as unknown as Record<string, unknown>);
          return actor;
        },
      };
    });
    return import('../../src/engine/compiled-machine.ts');
  }

  const machine = (id: string) => createMachine({ id, initial: 'a', states: { a: {} } });

  it('an actor system without _relay: machines run on XState, once checked, warned once, and the status says why', async () => {
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const warnedKey = Symbol.for('troupe.interpreter.warned');
    const global = globalThis as { [warnedKey]?: boolean };
    const before = global[warnedKey];
    delete global[warnedKey];
    try {
      const engine = await engineOn((actor) => {
        Object.defineProperty(actor.system, '_relay', { value: undefined });
      });
      const first = machine('first');
      expect(engine.compileMachine(first)).toBe(first);
      expect(engine.isCompiledMachine(engine.compileMachine(machine('second')))).toBe(false);
      const status = engine.interpreterStatus();
      expect(status.interpreter).toBe('xstate');
      expect(status.problems).toEqual(['xstate no longer has system._relay (a function)']);
      expect(status.reason).toBe(
        "the loaded xstate failed the compiled interpreter's check: xstate no longer has system._relay (a function)",
      );
      expect(status.checkMicros).toBeGreaterThanOrEqual(0);
      // A second copy of the engine in the same process (a bundle beside the package) does not warn again.
      const copy = await engineOn((actor) => {
        Object.defineProperty(actor.system, '_relay', { value: undefined });
      });
      expect(copy.compileMachine(first)).toBe(first);
      expect(copy.interpreterStatus().interpreter).toBe('xstate');
      expect(emitted).toHaveBeenCalledTimes(1);
      expect((emitted.mock.calls[0] as [string, { code: string }])[1].code).toBe('TROUPE_XSTATE_RUNTIME');
      expect((emitted.mock.calls[0] as [string])[0]).toContain(
        "Troupe's machines run on XState's own interpreter (same behaviour, slower). Set TROUPE_INTERPRETER=xstate",
      );
    } finally {
      if (before === undefined) delete global[warnedKey];
      else global[warnedKey] = before;
    }
  });

  it('an actor whose _stop is renamed falls back too', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const engine = await engineOn((actor) => {
      actor._halt = actor._stop;
      actor._stop = undefined;
    });
    const first = machine('first');
    expect(engine.compileMachine(first)).toBe(first);
    expect(engine.interpreterStatus().problems).toEqual([
      'xstate no longer has an actor’s _stop (a function)',
    ]);
  });

  it('still refuses a machine with parallel states', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const engine = await engineOn((actor) => {
      actor._processingStatus = 'running';
    });
    const parallel = createMachine({ id: 'p', type: 'parallel', states: { x: {}, y: {} } });
    expect(() => engine.compileMachine(parallel)).toThrow(/parallel/);
  });

  it('compiles on the installed xstate, without a warning, and the status says so', async () => {
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const engine = await engineOn(() => {});
    expect(engine.isCompiledMachine(engine.compileMachine(machine('installed')))).toBe(true);
    expect(engine.interpreterStatus()).toMatchObject({
      interpreter: 'compiled',
      problems: [],
      reason: 'the loaded xstate has the members the compiled interpreter uses and ran the canary alike',
    });
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
  });
});
