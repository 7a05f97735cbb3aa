import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The tests a mutation run uses (`npm run mutation`, see TESTING.md): the fast ones whose assertions state what the
 * machines and the termination policies must do. Left out: the generated-path suites (their oracle is the machine
 * under test, so a mutant changes the expectation and the result alike, and they take seconds per run), the crash
 * matrices, durable stores, providers and the random-program fuzz, which would take hours at one run per mutant.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // One module graph for all files: a mutant re-runs a few files, and a fresh environment per file cost more than
    // the tests themselves. The tests of this set leave no global state behind, so they pass either way.
    isolate: false,
    include: [
      'test/policies/**/*.test.ts',
      'test/machines/**/*.test.ts',
      'test/run/run.test.ts',
      'test/run/run-events.test.ts',
      'test/run/run-options.test.ts',
      'test/run/approval-*.test.ts',
      'test/run/tool-call-ids.test.ts',
      'test/agent/run-errors.test.ts',
      'test/agent/handoff-by-name.test.ts',
      'test/system/system.test.ts',
      'test/system/session-*.test.ts',
      'test/system/approvals.test.ts',
      'test/system/nested-session-placement.test.ts',
      'test/resources/*.test.ts',
      'test/properties/termination.test.ts',
      'test/properties/resources.test.ts',
    ],
    exclude: [
      '**/*.paths.test.ts',
      'test/system/durable-sessions.test.ts',
      'test/resources/resource-config.test.ts',
    ],
  },
});
