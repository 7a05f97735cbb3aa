import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the recorded real provider transcripts live. They are read in place (never copied into the repo):
 * env TROUPE_WIRE_FIXTURES wins, otherwise ../shared/fixtures/wire next to the repository root.
 */

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** The shared wire fixtures directory, or undefined when it is not present on this machine. */
export function sharedWireDir(): string | undefined {
  const fromEnv = process.env.TROUPE_WIRE_FIXTURES;
  if (fromEnv !== undefined && fromEnv.length > 0) return isDirectory(fromEnv) ? resolve(fromEnv) : undefined;
  const beside = join(repoRoot, '..', 'shared', 'fixtures', 'wire');
  return isDirectory(beside) ? beside : undefined;
}

/**
 * Prints one clear line when a conformance suite is skipped for want of the fixtures, so a green run that
 * skipped them is visible. Returns whether the suite should be skipped (for describe.skipIf).
 */
export function warnIfWireFixturesMissing(suite: string, dir: string | undefined): boolean {
  if (dir !== undefined) return false;
  const fromEnv = process.env.TROUPE_WIRE_FIXTURES;
  const looked =
    fromEnv !== undefined && fromEnv.length > 0
      ? `TROUPE_WIRE_FIXTURES=${fromEnv} is not a directory`
      : 'no ../shared/fixtures/wire beside the repo; set TROUPE_WIRE_FIXTURES to point elsewhere';
  console.warn(`[${suite}] SKIPPED: recorded wire fixtures not found (${looked})`);
  return true;
}
