import { createAgentSystem, createMemoryStore } from '../../dist/index.js';
import { stepAgent } from './durable-workload.ts';

const agent = stepAgent({ steps: 10 });
const store = createMemoryStore();
const system = createAgentSystem({ store });
const t = performance.now();
let n = 0;
while (performance.now() - t < 4000) {
  const s = system.spawn(agent, 'go', { id: `s${n}` });
  await s.result;
  await s.stop();
  store.delete(`s${n++}`);
}
console.log((((performance.now() - t) * 1000) / n / 10).toFixed(1), 'µs/step', n);
