import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import {
  assertPeerInstalled,
  loadedPeer,
  loadPeer,
  MissingPeerError,
  requirePeer,
} from '../../src/core/optional-peer.ts';

const missing = 'troupe-test-no-such-package';

/** A peer whose import is counted and fails until `installed` is set. */
function countedPeer(specifier: string) {
  const state = { imports: 0, installed: false };
  const peer = {
    package: specifier,
    import: async () => {
      state.imports++;
      if (!state.installed) throw new Error(`Cannot find package '${specifier}'`);
      return { answer: 42 };
    },
  };
  return { peer, state };
}

describe('optional peers', () => {
  it('a missing package fails with a ConfigError naming it, its install command and the feature', () => {
    let caught: unknown;
    try {
      assertPeerInstalled({ package: missing }, 'someFeature()');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MissingPeerError);
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as MissingPeerError;
    expect(error.name).toBe('ConfigError');
    expect(error.code).toBe('config_invalid');
    expect(error.package).toBe(missing);
    expect(error.install).toBe(`npm install ${missing}`);
    expect(error.feature).toBe('someFeature()');
    expect(error.message).toBe(
      `someFeature() needs the "${missing}" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run \`npm install ${missing}\`.`,
    );
  });

  it('an installed package passes the check; an entry point is checked by its specifier', () => {
    expect(() => assertPeerInstalled({ package: 'ibantools' }, 'f()')).not.toThrow();
    expect(() =>
      assertPeerInstalled({ package: 'ibantools', specifier: 'ibantools/no-such-entry' }, 'f()'),
    ).toThrow(MissingPeerError);
  });

  it('loads once for every caller, answers synchronously once loaded, and retries after a failed import', async () => {
    const { peer, state } = countedPeer(`${missing}-a`);
    expect(loadedPeer(peer)).toBeUndefined();
    const failed = loadPeer(peer, 'first()');
    expect(loadPeer(peer, 'second()')).toBe(failed);
    await expect(failed).rejects.toThrow(`first() needs the "${missing}-a" package`);
    expect(loadedPeer(peer)).toBeUndefined();
    state.installed = true;
    const [one, two] = await Promise.all([loadPeer(peer, 'f()'), loadPeer(peer, 'g()')]);
    expect(one).toBe(two);
    expect(loadedPeer(peer)).toBe(one);
    expect(state.imports).toBe(2);
    expect(await loadPeer(peer, 'h()')).toBe(one);
    expect(state.imports).toBe(2);
  });

  it('a rejected load carries the import error as its cause and the install command given', async () => {
    const { peer } = countedPeer(`${missing}-b`);
    const error = await loadPeer({ ...peer, install: 'npm install --save-dev x' }, 'f()').catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MissingPeerError);
    expect((error as MissingPeerError).install).toBe('npm install --save-dev x');
    expect(((error as Error).cause as Error).message).toContain('Cannot find package');
  });

  it('requirePeer loads synchronously, once, and names a missing package', () => {
    const first = requirePeer<{ isValidIBAN: unknown }>({ package: 'ibantools' }, 'f()');
    expect(typeof first.isValidIBAN).toBe('function');
    expect(requirePeer({ package: 'ibantools' }, 'f()')).toBe(first);
    expect(() => requirePeer({ package: missing }, 'pii: masking')).toThrow(
      `pii: masking needs the "${missing}" package`,
    );
  });
});
