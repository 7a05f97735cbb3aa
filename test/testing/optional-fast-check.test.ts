import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every source file `entry` imports, directly or not (relative imports only), and the packages they import. */
function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'|import\('([^']+)'\)/g,
    )) {
      const specifier = match[1] ?? match[2] ?? '';
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else packages.add(specifier);
    }
  };
  visit(join(root, entry));
  return { files, packages };
}

describe('fast-check is optional', () => {
  afterEach(() => {
    vi.doUnmock('fast-check');
    vi.resetModules();
  });

  it('is an optional peer dependency, and the main entry never imports it (nor troupe/testing)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.peerDependencies['fast-check']).toBeDefined();
    expect(pkg.peerDependenciesMeta['fast-check']).toEqual({ optional: true });
    const main = importGraph('src/index.ts');
    expect(main.packages.has('fast-check')).toBe(false);
    expect([...main.files].filter((file) => file.includes('/src/testing/'))).toEqual([]);
    expect(importGraph('src/testing/index.ts').packages.has('fast-check')).toBe(true);
  });

  it('without it, troupe/testing still loads, and the property helpers say what to install', async () => {
    vi.resetModules();
    vi.doMock('fast-check', () => {
      throw new Error("Cannot find package 'fast-check'");
    });
    const testing = await import('../../src/testing/index.ts');
    expect(typeof testing.scriptedModel).toBe('function');
    // A fresh copy of the modules, so a fresh ConfigError class: compare by name.
    expect(() => testing.arbitraryModelTurns()).toThrow(expect.objectContaining({ name: ConfigError.name }));
    expect(() => testing.arbitraryModelTurns()).toThrow(
      'arbitraryModelTurns() needs the "fast-check" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run `npm install --save-dev fast-check`.',
    );
  });
});
