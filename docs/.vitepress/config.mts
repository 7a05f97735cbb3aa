import { defineConfig } from 'vitepress';
import apiSidebar from '../api/typedoc-sidebar.json' with { type: 'json' };

/** TypeDoc names the modules after their files; the sidebar shows the import paths users write. */
const entryPoints: Record<string, string> = {
  '/api/index/': 'troupe',
  '/api/testing/': 'troupe/testing',
  '/api/providers/': 'troupe/providers',
  '/api/tools/builtin/': 'troupe/tools',
  '/api/tools/mcp/': 'troupe/mcp',
  '/api/restate/': 'troupe/restate',
};
interface SidebarItem {
  text: string;
  link?: string;
  items?: SidebarItem[];
}
// src/tools/builtin and src/tools/mcp come as a `tools` folder: list them beside the others.
const modules = (apiSidebar as SidebarItem[]).flatMap((item) =>
  item.link === undefined && item.items !== undefined ? item.items : [item],
);
const apiItems = modules.map((item) => ({ ...item, text: entryPoints[item.link ?? ''] ?? item.text }));

/**
 * The Troupe site: the guides in docs/ and the API reference TypeDoc writes to docs/api (run `typedoc` first).
 * Dead internal links fail the build (VitePress's default; `ignoreDeadLinks` stays off).
 */
export default defineConfig({
  title: 'Troupe',
  description: 'LLM agents as XState v5 actors: a typed, observable, budget-aware agent runtime',
  cleanUrls: true,
  lastUpdated: false,
  // The API reference is one large page set; its chunks are expected to be big.
  vite: { build: { chunkSizeWarningLimit: 4096 } },
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
      { text: 'API reference', link: '/api/', collapsed: true, items: apiItems },
    ],
  },
});
