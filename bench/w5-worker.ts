/**
 * W5: the resource manager in the path. Prints one JSON line like worker.ts:
 *   node --expose-gc bench/w5-worker.ts troupe W5 [--quick]
 */
import { measureW5 } from './w5.ts';

const metrics = await measureW5(process.argv.includes('--quick'));
process.stdout.write(`${JSON.stringify({ framework: 'troupe', workload: 'W5', metrics })}\n`);
process.exit(0);
