/**
 * W5: the resource manager in the path. Prints one JSON line like worker.ts.
 * Until src/actors/resource-manager.ts exists in the build, it reports `notImplemented`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const built = join(import.meta.dirname, '..', 'dist', 'actors', 'resource-manager.js');
if (!existsSync(built)) {
  process.stdout.write(
    `${JSON.stringify({ framework: 'troupe', workload: 'W5', metrics: { notImplemented: 1 } })}\n`,
  );
  process.exit(0);
}
// The resource manager exists but its W5 driver is not written yet: say so rather than guess its API.
process.stdout.write(
  `${JSON.stringify({ framework: 'troupe', workload: 'W5', metrics: { notImplemented: 1 } })}\n`,
);
