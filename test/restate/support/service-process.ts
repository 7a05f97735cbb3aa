import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * A Troupe endpoint in a child process (test/restate/support/service.ts), so a test can SIGKILL it and start it
 * again on the same port. It prints `listening <port>` once it serves.
 */

const script = fileURLToPath(new URL('./service.ts', import.meta.url));

export interface ServiceProcess {
  readonly pid: number;
  /** Resolves when the process has exited (with its signal, e.g. SIGKILL when it killed itself at a crash point). */
  readonly exited: Promise<NodeJS.Signals | null>;
  /** Sends `signal` (default SIGKILL) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** What it wrote to stderr. */
  errors(): string;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface ServiceEnv {
  PORT: string;
  /** The append-only effects log the tools and the model write (pid, key, phase). */
  EFFECTS_LOG: string;
  /** The n-th crash point this process reaches SIGKILLs it; 0 or absent: never. */
  CRASH_AT?: string;
  /** Where the endpoint's audit log goes (JSONL); absent: no audit log. */
  AUDIT_LOG?: string;
}

export function startService(env: ServiceEnv): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--experimental-transform-types', '--no-warnings', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      RESTATE_LOGGING: 'WARN',
      // The service runs its machines on the interpreter the tests run on (vitest.config.ts runs them on both).
      ...(process.env.TROUPE_INTERPRETER ? { TROUPE_INTERPRETER: process.env.TROUPE_INTERPRETER } : {}),
      ...env,
    },
  });
  running.add(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => {
      running.delete(child);
      resolve(signal);
    }),
  );
  const service: ServiceProcess = {
    pid: child.pid as number,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    errors: () => stderr,
  };
  return new Promise((resolve, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('listening ')) {
        child.stdout?.off('data', onData);
        resolve(service);
      }
    };
    child.stdout?.on('data', onData);
    // A process that dies before it listens (a crash point cannot be reached before it serves) is a broken setup.
    void exited.then((signal) =>
      reject(new Error(`the service exited (${signal}) before listening: ${stderr}`)),
    );
  });
}
