import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^troupe$/, replacement: src('index.ts') },
      { find: /^troupe\/testing$/, replacement: src('testing/index.ts') },
      { find: /^troupe\/providers$/, replacement: src('providers/index.ts') },
    ],
  },
  test: {
    // The examples of docs/testing.md are tests themselves: they run here, as users would run them.
    include: ['test/**/*.test.ts', 'examples/testing/**/*.test.ts'],
    testTimeout: 30_000,
  },
});
