/**
 * How many sessions one process holds (issue 4's closing figure): N sessions whose turn finished and that wait for
 * a follow-up (idle), plus N sessions parked in a model call that has not answered (running), all in one
 * createAgentSystem. Prints sessions, RSS, heap and wall times for spawning, finishing and shutting down.
 *   npm run build && node --expose-gc bench/system/sessions.ts [N=10000]
 */
import { createAgentSystem, defineAgent, type ModelProvider, type Session } from '../../dist/index.js';

const n = Number(process.argv[2] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const memory = () => {
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
};

const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };
const quick: ModelProvider = {
  provider: 'bench',
  model: 'quick',
  generate: async () => ({ text: 'done', toolCalls: [], stopReason: 'end_turn', usage }),
};
let parked: (() => void)[] = [];
const parking: ModelProvider = {
  provider: 'bench',
  model: 'parked',
  async generate(request) {
    await new Promise<void>((resolve) => {
      parked.push(resolve);
      request.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    return { text: 'late', toolCalls: [], stopReason: 'end_turn', usage };
  },
};

const answering = defineAgent({ name: 'answering', instructions: 'answer', model: quick });
const waiting = defineAgent({ name: 'waiting', instructions: 'wait', model: parking });

const before = memory();
const system = createAgentSystem();
let start = performance.now();
const finished: Session[] = [];
for (let i = 0; i < n; i++) finished.push(system.spawn(answering, `question ${i}`));
await Promise.all(finished.map((session) => session.result));
const finishWall = performance.now() - start;
const afterFinished = memory();

start = performance.now();
for (let i = 0; i < n; i++) system.spawn(waiting, `question ${i}`);
const parkWall = performance.now() - start;
await new Promise((resolve) => setTimeout(resolve, 50));
const afterParked = memory();
const held = system.list().length;
const idle = system.list().filter((session) => session.status === 'idle').length;

start = performance.now();
await system.shutdown();
const shutdownWall = performance.now() - start;
parked = [];
finished.length = 0;
await new Promise((resolve) => setTimeout(resolve, 50));
const afterShutdown = memory();

const per = (bytes: number, count: number) => `${(bytes / count / 1024).toFixed(1)} KiB`;
console.log(
  `sessions held: ${held} (${idle} idle after a finished turn, ${held - idle} parked in a model call)`,
);
console.log(
  `spawn+finish ${n} sessions: ${finishWall.toFixed(0)} ms (${((finishWall * 1000) / n).toFixed(0)} µs each)`,
);
console.log(
  `spawn ${n} parked sessions: ${parkWall.toFixed(0)} ms (${((parkWall * 1000) / n).toFixed(0)} µs each)`,
);
console.log(
  `RSS: start ${mib(before.rss)}, ${n} idle ${mib(afterFinished.rss)}, +${n} parked ${mib(afterParked.rss)}, after shutdown ${mib(afterShutdown.rss)}`,
);
console.log(
  `heap: start ${mib(before.heapUsed)}, idle ${per(afterFinished.heapUsed - before.heapUsed, n)}/session, parked ${per(afterParked.heapUsed - afterFinished.heapUsed, n)}/session, after shutdown ${mib(afterShutdown.heapUsed)}`,
);
console.log(
  `shutdown of ${held} sessions: ${shutdownWall.toFixed(0)} ms; sessions left: ${system.list().length}`,
);
