import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));

export interface ScriptExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts a TypeScript script in a child process (killed after 25 s at the latest); `exited` settles when it ends,
 * `printed(text)` when its stdout holds `text`.
 */
export function startScript(script: string, args: readonly string[]) {
  const child: ChildProcess = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', script, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit: ScriptExit = { code: null, signal: null, stdout: '', stderr: '' };
  const waiters: { text: string; resolve: () => void }[] = [];
  const guard = setTimeout(() => child.kill('SIGKILL'), 25_000);
  child.stdout?.on('data', (chunk: Buffer) => {
    exit.stdout += chunk.toString();
    for (const waiter of waiters) if (exit.stdout.includes(waiter.text)) waiter.resolve();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    exit.stderr += chunk.toString();
  });
  const exited = new Promise<ScriptExit>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      for (const waiter of waiters) waiter.resolve();
      resolve({ ...exit, code, signal });
    }),
  );
  const printed = (text: string) =>
    new Promise<void>((resolve) => {
      if (exit.stdout.includes(text)) resolve();
      else waiters.push({ text, resolve });
    });
  return { child, exited, printed, exit };
}
