import { basename } from 'node:path';

/** Commands that download and run a package named by their first argument (`npx -y @scope/pkg …`). */
const packageRunners = new Set(['npx', 'pnpx', 'bunx', 'uvx']);
/** Commands whose sub-command runs a package: `pnpm dlx pkg`, `npm exec pkg`, `yarn dlx pkg`, `bun x pkg`, `pipx run pkg`. */
const runnerSubcommands = new Map([
  ['pnpm', ['dlx', 'exec']],
  ['npm', ['exec', 'x']],
  ['yarn', ['dlx']],
  ['bun', ['x']],
  ['pipx', ['run']],
]);
/** Commands that run the script they are given (`node …/dist/index.js`); any other command is the server itself. */
const interpreters = new Set([
  'node',
  'nodejs',
  'bun',
  'deno',
  'tsx',
  'ts-node',
  'python',
  'python3',
  'uv',
  'ruby',
  'bash',
  'sh',
]);
/** Folder and file names that say nothing about which server it is (`…/server-everything/dist/index.js`). */
const genericParts = new Set(['index', 'main', 'dist', 'build', 'lib', 'src', 'bin', 'out']);
const scriptExtension = /\.(m?js|cjs|m?ts|cts|py|sh|rb|exe|cmd)$/i;

/**
 * The name of a stdio MCP server nobody named: the package a runner fetches (`npx -y
 * @modelcontextprotocol/server-filesystem /tmp` is `server-filesystem`), the module `python -m` runs, the script an
 * interpreter runs (named after its folder when the file is only `index.js`), else the command's own file name.
 */
export function defaultStdioServerName(command: string, args: readonly string[]): string {
  const program = basename(command).replace(scriptExtension, '');
  const subcommands = runnerSubcommands.get(program);
  const operands = args.filter((arg) => !arg.startsWith('-'));
  if (packageRunners.has(program) || subcommands?.includes(operands[0] ?? '') === true) {
    const name = packageName(operands[packageRunners.has(program) ? 0 : 1]);
    if (name !== undefined) return name;
  }
  const module = args.indexOf('-m');
  if (module !== -1 && args[module + 1] !== undefined) {
    return (args[module + 1] as string).split('.').at(-1) as string;
  }
  if (!interpreters.has(program)) return scriptName(command) ?? program;
  const script =
    operands.find((arg) => scriptExtension.test(arg)) ?? operands.find((arg) => /[\\/]/.test(arg));
  return (script === undefined ? undefined : scriptName(script)) ?? program;
}

/** `@scope/pkg@1.2.0` is `pkg`; `pkg==1.0` (Python) is `pkg`. */
function packageName(spec: string | undefined): string | undefined {
  if (spec === undefined || spec === '') return undefined;
  const unscoped = spec.startsWith('@') ? spec.slice(spec.indexOf('/') + 1) : spec;
  const name = unscoped.split(/@|==|>=|<=|~=|\[/)[0];
  return name === undefined || name === '' ? undefined : name;
}

function scriptName(path: string): string | undefined {
  const parts = path
    .split(/[\\/]/)
    .map((part) => part.replace(scriptExtension, ''))
    .filter((part) => part !== '' && part !== '.' && part !== '..' && !genericParts.has(part));
  return parts.at(-1);
}
