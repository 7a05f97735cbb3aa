import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoggerTransport } from '@restatedev/restate-sdk';

/**
 * A Restate server for one test file: the binary from the devDependency `@restatedev/restate-server-linux-x64`,
 * a temporary base dir, loopback only (TCP, no unix sockets), free ports, telemetry off, one partition and a small
 * RocksDB budget. `kill()` SIGKILLs it and `start()` brings it back on the same base dir and ports.
 */

const root = fileURLToPath(new URL('../../../', import.meta.url));

export const restateServerBinary = join(
  root,
  'node_modules/@restatedev/restate-server-linux-x64/bin/restate-server',
);

/** Why the Restate tests cannot run here, or undefined when they can. */
export function restateUnavailable(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return `the Restate server binary of the devDependencies is for linux-x64 (this is ${process.platform}-${process.arch})`;
  if (!existsSync(restateServerBinary))
    return `the Restate server binary is missing (${restateServerBinary}): run npm ci`;
  return undefined;
}

export interface RestateServer {
  readonly ingress: string;
  readonly admin: string;
  readonly baseDir: string;
  /** The pid of the running server process. */
  readonly pid: number | undefined;
  /** Registers (or re-registers) an endpoint: POST /deployments {uri, force: true}. */
  register(uri: string): Promise<void>;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same base dir and ports; resolves once admin and ingress answer. */
  start(): Promise<void>;
  /** Stops it (SIGTERM, then SIGKILL) and removes the base dir. */
  stop(): Promise<void>;
  /** The server's log so far. */
  log(): string;
  /** A SQL query on the admin API (sys_invocation, sys_journal, state...). */
  query<T>(sql: string): Promise<T[]>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startRestateServer(): Promise<RestateServer> {
  const baseDir = mkdtempSync(join(tmpdir(), 'troupe-restate-'));
  const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()];
  const ingress = `http://127.0.0.1:${ingressPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  const logPath = join(baseDir, 'server.log');
  let child: ChildProcess | undefined;

  const start = async () => {
    const out = openSync(logPath, 'a');
    child = spawn(
      restateServerBinary,
      [
        '--base-dir',
        join(baseDir, 'data'),
        '--node-name',
        'n1',
        '--cluster-name',
        'troupe-test',
        '--no-logo',
      ],
      {
        stdio: ['ignore', out, out],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: baseDir,
          DO_NOT_TRACK: '1',
          RESTATE_DISABLE_TELEMETRY: 'true',
          RESTATE_BIND_IP: '127.0.0.1',
          RESTATE_LISTEN_MODE: 'tcp',
          RESTATE_INGRESS__BIND_PORT: String(ingressPort),
          RESTATE_ADMIN__BIND_PORT: String(adminPort),
          RESTATE_BIND_PORT: String(nodePort),
          RESTATE_DEFAULT_NUM_PARTITIONS: '1',
          RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE: '128 MiB',
          RESTATE_LOG_FORMAT: 'compact',
          RESTATE_LOG_DISABLE_ANSI_CODES: 'true',
          RESTATE_LOGGING: 'WARN',
        },
      },
    );
    const started = child;
    running.add(started);
    started.once('exit', () => running.delete(started));
    await waitFor(async () => {
      if (started.exitCode !== null) throw new Error(`restate-server exited: ${readLog()}`);
      return (await ok(`${admin}/health`)) && (await ok(`${ingress}/restate/health`));
    }, 30_000);
  };

  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');

  const exit = async (signal: NodeJS.Signals) => {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    current.kill(signal);
    await gone;
  };

  await start();
  return {
    ingress,
    admin,
    baseDir,
    get pid() {
      return child?.pid;
    },
    async register(uri) {
      const response = await fetch(`${admin}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri, force: true }),
      });
      if (!response.ok) throw new Error(`registering ${uri}: ${response.status} ${await response.text()}`);
    },
    kill: () => exit('SIGKILL'),
    start,
    async stop() {
      const current = child;
      if (current && current.exitCode === null && current.signalCode === null) {
        const timer = setTimeout(() => current.kill('SIGKILL'), 3000);
        await exit('SIGTERM');
        clearTimeout(timer);
      }
      rmSync(baseDir, { recursive: true, force: true });
    },
    log: readLog,
    async query<T>(sql: string) {
      const response = await fetch(`${admin}/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: sql }),
      });
      if (!response.ok) throw new Error(`query: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { rows: T[] }).rows;
    },
  };
}

async function ok(url: string): Promise<boolean> {
  try {
    const response = await fetch(url);
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The SDK logs every invocation (and every TerminalError a test provokes): a test's endpoint keeps errors only. */
export const quietLogger: LoggerTransport = (params, message, ...rest) => {
  if (params.level === 'error') console.error(message, ...rest);
};
