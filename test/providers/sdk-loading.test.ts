import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The SDKs are optional peer dependencies, loaded by the provider that uses them on its first call. These tests
 * run a fresh Node process (so nothing is cached from other tests) with module hooks that watch, and can block,
 * the resolution and loading of the three SDK packages, then drive `troupe/providers` from the sources.
 */

const sdks = ['openai', '@anthropic-ai/sdk', '@google/genai'];
const providersEntry = fileURLToPath(new URL('../../src/providers/index.ts', import.meta.url));

/**
 * Hooks for the child: every file loaded from an SDK package is noted (by package), and resolving a package in
 * TROUPE_BLOCK_SDKS fails exactly as it does when the package is not installed.
 */
const hooks = `
import { registerHooks } from 'node:module';
const blocked = new Set((process.env.TROUPE_BLOCK_SDKS ?? '').split(',').filter(Boolean));
const packages = ${JSON.stringify(sdks)};
globalThis.loadedSdks = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const pkg = packages.find((name) => specifier === name || specifier.startsWith(name + '/'));
    if (pkg !== undefined && blocked.has(pkg)) {
      const error = new Error("Cannot find package '" + pkg + "'");
      error.code = 'ERR_MODULE_NOT_FOUND';
      throw error;
    }
    return next(specifier, context);
  },
  load(url, context, next) {
    for (const name of packages) if (url.includes('/node_modules/' + name + '/')) globalThis.loadedSdks.add(name);
    return next(url, context);
  },
});
`;

interface ProbeResult {
  afterImport: string[];
  afterFactories: string[];
  afterOpenAICall: string[];
  missing: { name: string; message: string } | null;
  otherFactoriesWork: boolean;
}

/** Runs the probe in a fresh process, with `blocked` SDKs made unresolvable. */
function probe(blocked: string[]): ProbeResult {
  const script = `
const loaded = () => [...globalThis.loadedSdks].sort();
const providers = await import(${JSON.stringify(providersEntry)});
const out = { afterImport: loaded() };
let missing = null;
let otherFactoriesWork = true;
for (const make of [
  () => providers.anthropic('claude-test', { apiKey: 'k' }),
  () => providers.gemini('gemini-test', { apiKey: 'k' }),
  () => providers.openai.responses('gpt-test', { apiKey: 'k' }),
]) {
  try { make(); } catch (error) { if (missing === null) missing = { name: error.name, message: error.message }; }
}
try {
  providers.openaiCompatible({ baseURL: 'http://127.0.0.1:9' })('m');
} catch { otherFactoriesWork = false; }
out.afterFactories = loaded();
// The first call loads the SDK of that provider, and only that one.
const refused = async () => new Response('{"error":{"message":"no"}}', { status: 400, headers: { 'content-type': 'application/json' } });
try {
  const model = providers.openai('gpt-test', { apiKey: 'k', fetch: refused, maxRetries: 0 });
  const call = { messages: [{ role: 'user', content: 'x' }], tools: [], settings: {}, signal: new AbortController().signal };
  await model.generate(call).catch(() => {});
} catch {}
out.afterOpenAICall = loaded();
out.missing = missing;
out.otherFactoriesWork = otherFactoriesWork;
process.stdout.write(JSON.stringify(out));
`;
  const child = spawnSync(
    process.execPath,
    [
      '--experimental-transform-types',
      '--no-warnings',
      '--import',
      `data:text/javascript,${encodeURIComponent(hooks)}`,
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8', env: { ...process.env, TROUPE_BLOCK_SDKS: blocked.join(',') }, timeout: 60_000 },
  );
  if (child.status !== 0) throw new Error(`probe failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as ProbeResult;
}

describe('troupe/providers and the optional SDKs', () => {
  it('importing the entry point and creating providers loads no SDK; a first call loads only its own', () => {
    const result = probe([]);
    expect(result.afterImport).toEqual([]);
    expect(result.afterFactories).toEqual([]);
    expect(result.missing).toBeNull();
    expect(result.afterOpenAICall).toEqual(['openai']);
  });

  it('a provider whose SDK is not installed fails at creation with a ConfigError naming the package', () => {
    const result = probe(['@anthropic-ai/sdk']);
    expect(result.missing?.name).toBe('ConfigError');
    expect(result.missing?.message).toMatch(/anthropic\(\) needs the "@anthropic-ai\/sdk" package/);
    expect(result.missing?.message).toContain('npm install @anthropic-ai/sdk');
    // The others are unaffected, and nothing was loaded for the check.
    expect(result.otherFactoriesWork).toBe(true);
    expect(result.afterFactories).toEqual([]);
  });

  it('each factory names its own package', () => {
    expect(probe(['@google/genai']).missing?.message).toContain('npm install @google/genai');
    const withoutOpenAI = probe(['openai', '@anthropic-ai/sdk', '@google/genai']);
    expect(withoutOpenAI.missing?.message).toContain('npm install @anthropic-ai/sdk');
    expect(withoutOpenAI.otherFactoriesWork).toBe(false);
  });
});

describe('a provider without its SDK and without an API key', () => {
  it('names the missing SDK first: it is what to install before a key matters', () => {
    const script = `
const providers = await import(${JSON.stringify(providersEntry)});
const messages = [];
for (const make of [
  () => providers.anthropic('claude-test'),
  () => providers.gemini('gemini-test'),
  () => providers.openai('gpt-test'),
  () => providers.openai.responses('gpt-test'),
]) {
  try { make(); messages.push('created'); } catch (error) { messages.push(error.name + ': ' + error.message); }
}
process.stdout.write(JSON.stringify(messages));
`;
    const env: NodeJS.ProcessEnv = { ...process.env, TROUPE_BLOCK_SDKS: sdks.join(',') };
    for (const key of ['ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'OPENAI_API_KEY'])
      delete env[key];
    const child = spawnSync(
      process.execPath,
      [
        '--experimental-transform-types',
        '--no-warnings',
        '--import',
        `data:text/javascript,${encodeURIComponent(hooks)}`,
        '--input-type=module',
        '-e',
        script,
      ],
      { encoding: 'utf8', env, timeout: 60_000 },
    );
    expect(child.status, child.stderr).toBe(0);
    const messages = JSON.parse(child.stdout) as string[];
    expect(messages).toHaveLength(4);
    expect(messages[0]).toMatch(/^ConfigError: anthropic\(\) needs the "@anthropic-ai\/sdk" package/);
    expect(messages[1]).toMatch(/^ConfigError: gemini\(\) needs the "@google\/genai" package/);
    expect(messages[2]).toMatch(/^ConfigError: openai\(\) needs the "openai" package/);
    expect(messages[3]).toMatch(/^ConfigError: openai\.responses\(\) needs the "openai" package/);
  });
});
