import type { Framework } from '../scenario.ts';

/** Loaded lazily so a worker only imports the framework it measures. */
export const frameworkLoaders: Record<string, () => Promise<Framework>> = {
  floor: async () => (await import('./floor.ts')).floor,
  troupe: async () => (await import('./troupe.ts')).troupe,
  'troupe-baseline': async () => (await import('./troupe-baseline.ts')).troupeBaseline,
  'ai-sdk': async () => (await import('./ai-sdk.ts')).aiSdk,
  'openai-agents': async () => (await import('./openai-agents.ts')).openaiAgents,
  langchain: async () => (await import('./langchain.ts')).langchain,
  mastra: async () => (await import('./mastra.ts')).mastra,
};

/** Measured when no framework is named: troupe-baseline needs another build (TROUPE_BASELINE_DIST), so only by name. */
export const frameworkNames = Object.keys(frameworkLoaders).filter((name) => name !== 'troupe-baseline');
