import type { Framework } from '../scenario.ts';

/** Loaded lazily so a worker only imports the framework it measures. */
export const frameworkLoaders: Record<string, () => Promise<Framework>> = {
  floor: async () => (await import('./floor.ts')).floor,
  troupe: async () => (await import('./troupe.ts')).troupe,
  'ai-sdk': async () => (await import('./ai-sdk.ts')).aiSdk,
  'openai-agents': async () => (await import('./openai-agents.ts')).openaiAgents,
  langchain: async () => (await import('./langchain.ts')).langchain,
  mastra: async () => (await import('./mastra.ts')).mastra,
};

export const frameworkNames = Object.keys(frameworkLoaders);
