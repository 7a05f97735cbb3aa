import * as troupeDist from '../../dist/index.js';
import type { Scenario } from '../scenario.ts';
import { prepareTroupeWith, type TroupeRunner, troupeFramework } from './troupe-adapter.ts';

export { benchModel, type TroupeRunner } from './troupe-adapter.ts';

/** This tree's build of Troupe (dist/, from `npm run build`). */
export function prepareTroupe(scenario: Scenario): TroupeRunner {
  return prepareTroupeWith(troupeDist, 'troupe', scenario);
}

export const troupe = troupeFramework('troupe', troupeDist);
