import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// The base config's projects each name their own `include` (the whole suite, once per interpreter), which would
// override the narrowed list below: the mutation run uses one project, on the compiled interpreter the machines run on.
const { projects: _projects, ...baseTest } = base.test ?? {};

/**
 * The tests a mutation run uses (`npm run mutation`, see TESTING.md): the unit tests of the machines and the
 * termination policies, which state what these files must do and run in milliseconds. Left out: the generated-path
 * suites (their oracle is the machine under test, so a mutant changes the expectation and the result alike, and they
 * take seconds per run), the property tests and the end-to-end suites (runs, sessions, crash matrices, stores,
 * providers, the fuzz), which cover these files too but would take hours at one run per mutant.
 */
export default defineConfig({
  ...base,
  test: {
    ...baseTest,
    // One module graph for all files: a mutant re-runs a few files, and a fresh environment per file cost more than
    // the tests themselves. The tests of this set leave no global state behind, so they pass either way.
    isolate: false,
    include: [
      'test/policies/**/*.test.ts',
      'test/machines/**/*.test.ts',
      'test/resources/ledger*.test.ts',
      'test/guardrails/*verdict.test.ts',
      'test/engine/*.test.ts',
    ],
    exclude: ['**/*.paths.test.ts', 'test/engine/*-paths.test.ts', 'test/engine/interpreter-switch.test.ts'],
  },
});
