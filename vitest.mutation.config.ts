import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

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
    ...base.test,
    // One module graph for all files: a mutant re-runs a few files, and a fresh environment per file cost more than
    // the tests themselves. The tests of this set leave no global state behind, so they pass either way.
    isolate: false,
    include: ['test/policies/**/*.test.ts', 'test/machines/**/*.test.ts'],
    exclude: ['**/*.paths.test.ts'],
  },
});
