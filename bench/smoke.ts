// Quick correctness check of every adapter: node bench/smoke.ts [framework...]
import { frameworkLoaders, frameworkNames } from './frameworks/index.ts';
import { check, type Scenario, toolCounter } from './scenario.ts';

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : frameworkNames;
const scenarios: Record<string, Scenario> = {
  tools: { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 },
  parallel: { toolSteps: 1, toolsPerTurn: 3, modelDelayMs: 1, toolDelayMs: 5, deltas: 0 },
  stream: { toolSteps: 0, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 50 },
};
for (const name of names) {
  const framework = await (frameworkLoaders[name] as () => ReturnType<(typeof frameworkLoaders)[string]>)();
  for (const [label, scenario] of Object.entries(scenarios)) {
    try {
      const runner = await framework.prepare(scenario);
      const before = toolCounter.executions;
      const outcome = label === 'stream' ? await runner.stream('go') : await runner.run('go');
      check(scenario, outcome, name);
      const ran = toolCounter.executions - before;
      if (ran !== scenario.toolSteps * scenario.toolsPerTurn) throw new Error(`ran ${ran} tools`);
      console.log(`${name} ${label}: ok`);
    } catch (error) {
      console.log(`${name} ${label}: FAIL ${(error as Error).stack?.slice(0, 600)}`);
    }
  }
}
