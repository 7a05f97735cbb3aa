/**
 * Counts the source files a model call goes through: the files of src/ with code that runs during one `run()` and
 * during one `system.spawn()` turn, each a single model call answered with text (a scripted model). Measured with
 * V8's precise coverage (call counts), taken around the second of two identical calls, so imports and first-use
 * set-up are not counted; a file counts when any of its functions ran.
 *
 *   node --experimental-transform-types --no-warnings bench/path-files.ts
 */
import { Session } from 'node:inspector/promises';

const src = new URL('../src/', import.meta.url).href;
const { defineAgent, run, createAgentSystem } = await import(`${src}index.ts`);
const { scriptedModel } = await import(`${src}testing/index.ts`);

const model = scriptedModel([{ text: 'hello', stopReason: 'end_turn' }], { loop: true });
const agent = defineAgent({ name: 'counted', instructions: 'Be brief.', model });
const system = createAgentSystem({});
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

interface Coverage {
  url: string;
  functions: { ranges: { count: number }[] }[];
}

async function filesOf(label: string, call: () => Promise<unknown>): Promise<void> {
  await call();
  await session.post('Profiler.takePreciseCoverage'); // resets the counts
  await call();
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: Coverage[] };
  const files = result
    .filter((script) => script.url.startsWith(src))
    .filter((script) => script.functions.some((fn) => (fn.ranges[0]?.count ?? 0) > 0))
    .map((script) => script.url.slice(src.length))
    .sort();
  console.log(`${label}: ${files.length} files\n${files.map((file) => `  ${file}`).join('\n')}`);
}

await filesOf('run()', () => run(agent, 'hi'));
await filesOf('system.spawn()', () => system.spawn(agent, 'hi').result);
await system.shutdown();
session.disconnect();
