import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { type ToolContext, ToolInputError } from 'troupe';
import { type SqlQueryTool, sqlQuery } from 'troupe/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  QueryProcessReadyMessage,
  QueryRequestMessage,
} from '../../../src/tools/builtin/sql-query-messages.ts';

const mib = 1024 * 1024;
let dir: string;
let database: string;
let sql: SqlQueryTool;

function context(): ToolContext {
  return {
    signal: new AbortController().signal,
    context: undefined,
    sessionId: 's',
    route: 'a',
    turn: 1,
    agent: 'a',
    callId: 'c',
    step: 1,
    attempt: 1,
    idempotencyKey: 's:1:1:c',
  };
}

/** A field of /proc/<pid>/status in bytes (VmHWM: the most resident memory the process ever had). */
function statusBytes(pid: number, field: string): number {
  const line = new RegExp(`^${field}:\\s*(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1]) * 1024;
}

/** One value at a time stays under the value limit, but sorting 800 of them needs about 720 MB. */
const bigSort =
  "WITH RECURSIVE r(i, s) AS (SELECT 1, printf('%.*c', 900000, 'x') UNION ALL SELECT i + 1, s FROM r WHERE i < 800) " +
  'SELECT max(length(s)), count(*) FROM (SELECT s FROM r ORDER BY random())';

const onLinux = process.platform === 'linux' && existsSync('/proc/self/status');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-sql-memory-'));
  database = join(dir, 'small.db');
  const db = new DatabaseSync(database);
  db.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1), ('two');");
  db.close();
  sql = sqlQuery({ database, timeoutMs: 60_000 });
});

afterAll(async () => {
  await sql.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('sqlQuery bounds the memory of its query process', () => {
  it('one huge value (printf of 900 million characters) is an error result, not 900 MB', async () => {
    await expect(
      sql.execute({ query: "SELECT length(printf('%.*c', 900000000, 'x'))" }, context()),
    ).rejects.toThrow(/would make a value larger than 16777216 bytes/);
    if (onLinux) expect(statusBytes(sql.processId as number, 'VmHWM')).toBeLessThan(256 * mib);
  });

  it.runIf(onLinux)(
    'a query whose values are each small but together need 720 MB fails with out of memory, and the process stays bounded',
    { timeout: 120_000 },
    async () => {
      const error = await Promise.resolve(sql.execute({ query: bigSort }, context())).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(ToolInputError);
      expect(String(error)).toMatch(/needs more memory than a query may use/);
      const pid = sql.processId as number;
      // The cap is on the address space: the process's size at start plus 256 MiB.
      expect(readFileSync(`/proc/${pid}/limits`, 'utf8')).toMatch(/^Max address space\s+\d+\s+\d+\s+bytes/m);
      expect(statusBytes(pid, 'VmHWM')).toBeLessThan(256 * mib + 128 * mib);
      // The same process answers the next query.
      const next = await sql.execute({ query: 'SELECT count(*) AS n FROM t' }, context());
      expect(next.rows).toEqual([[2]]);
      expect(sql.processId).toBe(pid);
    },
  );

  it.runIf(onLinux)(
    'where no address-space cap can be set, the watchdog kills the process past its resident limit',
    { timeout: 120_000 },
    async () => {
      const entry = fileURLToPath(
        new URL('../../../src/tools/builtin/sql-query-process.ts', import.meta.url),
      );
      // Without PATH, `prlimit` cannot be found: the process falls back to its watchdog.
      const child = fork(entry, [String(process.pid), String(64 * mib)], {
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        execArgv: [],
        env: { ...process.env, PATH: '' },
      });
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (text: string) => {
        stderr += text;
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('exit', (_, signal) => resolve(signal)),
      );
      const ready = await new Promise<QueryProcessReadyMessage>((resolve) =>
        child.once('message', (message) => resolve(message as QueryProcessReadyMessage)),
      );
      expect(ready.memoryBound).toBe('resident-memory');
      const message: QueryRequestMessage = {
        id: 1,
        request: { database, sql: bigSort, maxRows: 5, maxCellChars: 100, maxValueBytes: 16 * mib },
        timeoutMs: 60_000,
        maxAnswerChars: 1 << 20,
      };
      child.send(message);
      expect(await exited).toBe('SIGKILL');
      expect(stderr).toMatch(/used more memory than a query may/);
    },
  );
});
