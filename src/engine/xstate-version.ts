import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

interface PackageManifest {
  name?: unknown;
  version?: unknown;
}

/**
 * The version of the xstate package that `import 'xstate'` loads from here, for the record in `interpreterStatus()`:
 * the choice of interpreter never reads it (runtime-gate.ts checks the loaded code, since a bundle can inline one
 * xstate beside another's package.json). It is read from that package's own package.json (resolved from this module, as the import is; `from` resolves it from another file). Undefined when
 * it cannot be read: e.g. in a bundle that inlined xstate and ships without it, where resolving from the bundle's
 * location finds no package.
 */
export function installedXStateVersion(from: string | URL = import.meta.url): string | undefined {
  let require: NodeJS.Require;
  try {
    require = createRequire(from);
  } catch {
    return undefined;
  }
  // xstate exports its package.json; a version that stopped doing so is found from its entry point instead.
  return versionOf(() => require('xstate/package.json') as PackageManifest) ?? versionNearEntry(require);
}

function versionOf(read: () => PackageManifest): string | undefined {
  try {
    const manifest = read();
    return manifest.name === 'xstate' && typeof manifest.version === 'string' ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The version in the package.json of xstate's entry point: the nearest one above it that has a name (a folder of
 * the package may hold a nameless one that only sets its module type).
 */
function versionNearEntry(require: NodeJS.Require): string | undefined {
  let directory: string;
  try {
    directory = dirname(require.resolve('xstate'));
  } catch {
    return undefined;
  }
  for (;;) {
    const manifest = manifestIn(directory);
    if (manifest?.name !== undefined) return versionOf(() => manifest);
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

function manifestIn(directory: string): PackageManifest | undefined {
  try {
    return JSON.parse(
      process.getBuiltinModule('node:fs').readFileSync(join(directory, 'package.json'), 'utf8'),
    ) as PackageManifest;
  } catch {
    return undefined;
  }
}
