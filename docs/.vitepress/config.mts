import { defineConfig } from 'vitepress';
import apiSidebar from '../api/typedoc-sidebar.json' with { type: 'json' };

/**
 * The Troupe site: the guides in docs/ and the API reference TypeDoc writes to docs/api (run `typedoc` first).
 * Dead internal links fail the build (VitePress's default; `ignoreDeadLinks` stays off).
 */
export default defineConfig({
  title: 'Troupe',
  description: 'LLM agents as XState v5 actors: a typed, observable, budget-aware agent runtime',
  cleanUrls: true,
  lastUpdated: false,
  themeConfig: {
    nav: [
      { text: 'Guides', link: '/getting-started' },
      { text: 'API', link: '/api/' },
    ],
    search: { provider: 'local' },
    sidebar: [
      {
        text: 'Start',
        items: [
          { text: 'Getting started', link: '/getting-started' },
          { text: 'The loop and its limits', link: '/the-loop' },
        ],
      },
      {
        text: 'Capabilities',
        items: [
          { text: 'Providers', link: '/providers' },
          { text: 'Tools and MCP', link: '/tools' },
          { text: 'Sessions and durability', link: '/sessions' },
          { text: 'Human in the loop', link: '/human-in-the-loop' },
          { text: 'Many agents', link: '/many-agents' },
          { text: 'Budgets and resources', link: '/budgets' },
          { text: 'Safety', link: '/safety' },
          { text: 'Testing your agents', link: '/testing' },
          { text: 'Restate', link: '/restate' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'How Troupe is built', link: '/internals' },
          { text: 'About these docs', link: '/about' },
        ],
      },
      { text: 'API reference', link: '/api/', collapsed: true, items: apiSidebar },
    ],
  },
});
