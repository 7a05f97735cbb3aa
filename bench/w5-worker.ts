/**
 * W5: the resource manager in the path. Prints one JSON line like worker.ts:
 *   node --expose-gc bench/w5-worker.ts troupe W5 [--quick] [--dist=<dist folder of another build>]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { measureW5, type W5Module } from './w5.ts';

const distOption = process.argv.find((arg) => arg.startsWith('--dist='))?.slice('--dist='.length);
const troupe = (await import(
  distOption ? pathToFileURL(join(resolve(distOption), 'index.js')).href : '../dist/index.js'
)) as W5Module;
const metrics = await measureW5(process.argv.includes('--quick'), troupe);
process.stdout.write(`${JSON.stringify({ framework: 'troupe', workload: 'W5', metrics })}\n`);
process.exit(0);
