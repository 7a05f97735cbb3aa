import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^troupe$/, replacement: src('index.ts') },
      { find: /^troupe\/testing$/, replacement: src('testing/index.ts') },
      { find: /^troupe\/providers$/, replacement: src('providers/index.ts') },
      { find: /^troupe\/mcp$/, replacement: src('tools/mcp/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
  },
});
