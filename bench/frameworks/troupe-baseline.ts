import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type TroupeModule, troupeFramework } from './troupe-adapter.ts';

/**
 * Another build of Troupe, measured by the same adapter as `troupe`: the dist/ folder named by TROUPE_BASELINE_DIST
 * (an older commit built in a worktree of its own), so that a change is measured against the commit before it in
 * the same run:
 *
 *   git worktree add --detach ../base <commit> && ln -s "$PWD/node_modules" ../base/node_modules
 *   (cd ../base && npm run build)
 *   TROUPE_BASELINE_DIST=../base/dist node bench/run.ts --frameworks=floor,troupe,troupe-baseline
 */
const dir = process.env.TROUPE_BASELINE_DIST;
if (dir === undefined || dir === '')
  throw new Error(
    'troupe-baseline: set TROUPE_BASELINE_DIST to the dist/ folder of the build to compare with',
  );
const entry = join(resolve(dir), 'index.js');
if (!existsSync(entry)) throw new Error(`troupe-baseline: ${entry} does not exist (build that tree first)`);

// The older build's types are not this tree's; the adapter uses only what both builds share (see TroupeModule).
const baselineDist = (await import(pathToFileURL(entry).href)) as TroupeModule;

export const troupeBaseline = troupeFramework('troupe-baseline', baselineDist);
