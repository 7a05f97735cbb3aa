import type { z } from 'zod';

let loaded: typeof z | undefined;

/**
 * The zod module, loaded on first use rather than when Troupe is imported: an application that defines tools or an
 * output schema has imported zod itself already, and one that does not never pays for it. It is loaded
 * synchronously from the file `import 'zod'` resolves to, so it is the same module instance as the application's
 * own `import { z } from 'zod'` (descriptions, metadata and `instanceof` all agree).
 */
export function zod(): typeof z {
  if (loaded !== undefined) return loaded;
  loaded = loadZod();
  return loaded;
}

function loadZod(): typeof z {
  // node:module and node:url are taken here, not imported: importing them and creating a require at load would cost
  // every import of Troupe about 1.5 ms.
  const { createRequire } = process.getBuiltinModule('node:module');
  const { fileURLToPath } = process.getBuiltinModule('node:url');
  const require = createRequire(import.meta.url);
  const esm = fileURLToPath(import.meta.resolve('zod'));
  let module: { z: typeof z };
  try {
    module = require(esm) as { z: typeof z };
  } catch (error) {
    // A Node.js that cannot require() an ES module (before 22.12) loads zod's CommonJS build instead; zod's checks
    // and its registry of descriptions work across the two builds.
    if ((error as { code?: unknown }).code !== 'ERR_REQUIRE_ESM') throw error;
    module = require('zod') as { z: typeof z };
  }
  return module.z;
}
