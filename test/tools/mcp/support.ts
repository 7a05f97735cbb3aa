import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The entry script of an MCP server package installed as a dev dependency (run with node: nothing downloaded). */
export function serverScript(
  pkg: '@modelcontextprotocol/server-everything' | '@modelcontextprotocol/server-filesystem',
): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin;
  return join(dirname(manifest), Object.values(bin)[0] as string);
}

/** Child processes of this process still alive (read from /proc: zombies and exited ones are not counted). */
export function liveChildren(): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') children.push(Number(entry));
    } catch {
      // The process exited while we looked.
    }
  }
  return children;
}

/** Open sockets of this process (TCP and Unix), counted from its file descriptors. */
export function openSockets(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const { readlinkSync } = require('node:fs') as typeof import('node:fs');
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) count++;
    } catch {
      // Closed while we looked.
    }
  }
  return count;
}

/** Open pipes of this process (a stdio server's stdin, stdout and stderr are pipes). */
export function openPipes(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const { readlinkSync } = require('node:fs') as typeof import('node:fs');
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('pipe:')) count++;
    } catch {
      // Closed while we looked.
    }
  }
  return count;
}
