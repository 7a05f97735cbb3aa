// Mutation testing of the statecharts and the termination policies: `npm run mutation` (see TESTING.md).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: {
    // Only the fast tests that exercise these files; `related: false` because the list is already narrowed there.
    configFile: 'vitest.mutation.config.ts',
    related: false,
  },
  mutate: [
    'src/machines/**/*.ts',
    'src/resources/ledger.ts',
    'src/policies/**/*.ts',
    'src/guardrails/*verdict.ts',
    'src/engine/**/*.ts',
  ],
  // Each mutant runs only the tests that covered it in the first, instrumented run.
  coverageAnalysis: 'perTest',
  // Static mutants (the statechart definitions, built once when a module loads) would each run every test of the
  // set, about half of the run time on these files; they are left out of the score (TESTING.md says what that means).
  ignoreStatic: true,
  // The development machines are small and shared: two test processes at most.
  concurrency: 2,
  timeoutMS: 10_000,
  // Re-runs test only the mutants whose code or covering tests changed. The file is local (reports/ is ignored):
  // it is keyed to exact source text, so a committed copy would be stale after almost any merge.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  // Stryker rewrites `extends` and `references` of the project's tsconfig with the TypeScript compiler API, which
  // TypeScript 7 (the native compiler) no longer ships. Our tsconfig has neither, so nothing needs rewriting: naming
  // a file that does not exist skips the step. No TypeScript checker plugin is used, so nothing else reads it.
  tsconfigFile: 'tsconfig.stryker-none.json',
  ignorePatterns: ['bench', 'examples', 'dist', 'coverage', 'reports', '.troupe'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  clearTextReporter: { allowColor: false, logTests: false, reportMutants: true, reportScoreTable: true },
  thresholds: { high: 90, low: 80, break: null },
};
