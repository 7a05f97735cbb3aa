import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * Tests that the second run on XState's interpreter would not tell anything new: the compiled interpreter's own
 * differential tests (they run both interpreters themselves), pure functions (the built-in tools and the PII
 * detectors on their own among them), stores, provider wire formats, source text, the resource manager's machine
 * (never compiled), and the Restate crash matrix (minutes of killed Restate servers; the other Restate tests run
 * their service on both interpreters, and the sessions' own crash matrix runs on both). Every other test runs
 * twice, once per interpreter; the switch test of test/engine runs in both projects.
 */
const notBehavioural = [
  'test/engine/!(interpreter-switch).test.ts',
  'test/resources/ledger*.test.ts',
  'test/properties/resources.test.ts',
  'test/restate/crash.test.ts',
  'test/tools/builtin/calculator.test.ts',
  'test/tools/builtin/document-search.test.ts',
  'test/tools/builtin/sql-query.test.ts',
  'test/pii/pii-detectors.test.ts',
  'test/pii/pii-disguised.test.ts',
  'test/pii/pii-streaming.test.ts',
  // A thousand server processes: the per-session lifecycle runs on both interpreters in sessions.test.ts.
  'test/tools/mcp/thousand-sessions.test.ts',
  // The MCP conformance suite: minutes of scenarios, each run in a client process of its own.
  'test/tools/mcp/conformance/**',
  'test/core/**',
  'test/docs/**',
  'test/persistence/**',
  'test/policies/**',
  'test/guardrails/*verdict.test.ts',
  'test/providers/**',
  'test/support/**',
  // Packs and installs the package: nothing in it depends on the interpreter.
  'test/package/**',
];

/** Every test file: the suite, and the examples of docs/testing.md, which run as users would run them. */
const tests = ['test/**/*.test.ts', 'examples/testing/**/*.test.ts'];

export default defineConfig({
  resolve: {
    alias: [
      { find: /^troupe$/, replacement: src('index.ts') },
      { find: /^troupe\/testing$/, replacement: src('testing/index.ts') },
      { find: /^troupe\/providers$/, replacement: src('providers/index.ts') },
      { find: /^troupe\/mcp$/, replacement: src('tools/mcp/index.ts') },
      { find: /^troupe\/tools$/, replacement: src('tools/builtin/index.ts') },
    ],
  },
  test: {
    testTimeout: 30_000,
    // Troupe's machines run on the compiled interpreter (src/engine); the behavioural tests also run on XState's
    // own (TROUPE_INTERPRETER=xstate), so that an interpreter difference fails a test that shows what it changed.
    projects: [
      { extends: true, test: { name: 'compiled', include: tests } },
      {
        extends: true,
        test: {
          name: 'xstate',
          include: tests,
          exclude: [...configDefaults.exclude, ...notBehavioural],
          env: { TROUPE_INTERPRETER: 'xstate' },
        },
      },
    ],
  },
});
