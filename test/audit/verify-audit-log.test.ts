import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AuditRecord, createAuditLog, jsonlAuditSink, verifyAuditLog } from 'troupe';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashOfRecord } from '../../src/audit/audit-record.ts';

let directory = '';
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-audit-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A JSONL audit log of five records, and its lines. */
async function fiveRecords(): Promise<{ path: string; lines: string[]; last: AuditRecord }> {
  const path = join(directory, 'audit.jsonl');
  const log = createAuditLog({ sink: jsonlAuditSink(path) });
  let last: AuditRecord | undefined;
  for (let i = 0; i < 5; i++)
    last = log.record({ type: 'permission', sessionId: 's', agent: 'a', route: 'a', data: { i } });
  await log.close();
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
  return { path, lines, last: last as AuditRecord };
}

const rewrite = (path: string, lines: string[]) => writeFile(path, `${lines.join('\n')}\n`);

describe('verifyAuditLog', () => {
  it('accepts an intact log, from a file or from records', async () => {
    const { path, lines, last } = await fiveRecords();
    expect(lines).toHaveLength(5);
    expect(verifyAuditLog(path)).toEqual({ ok: true, count: 5 });
    expect(verifyAuditLog(lines.map((line) => JSON.parse(line)))).toEqual({ ok: true, count: 5 });
    expect(verifyAuditLog(path, { head: { seq: last.seq, hash: last.hash } })).toEqual({
      ok: true,
      count: 5,
    });
    expect(verifyAuditLog([])).toEqual({ ok: true, count: 0 });
  });

  it('detects an edited field', async () => {
    const { path, lines } = await fiveRecords();
    lines[2] = (lines[2] as string).replace('"i":2', '"i":7');
    await rewrite(path, lines);
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      at: 3,
      reason: expect.stringContaining('modified'),
    });
  });

  it('detects an edited record whose hash was recomputed, and a rewritten tail given the known head', async () => {
    const { lines, last } = await fiveRecords();
    const records = lines.map((line) => JSON.parse(line) as AuditRecord);
    const rehash = (record: AuditRecord): AuditRecord => ({ ...record, hash: hashOfRecord(record) });
    // The edited record is consistent on its own, but the next one names the original's hash.
    records[1] = rehash({ ...(records[1] as AuditRecord), data: { i: 9 } });
    expect(verifyAuditLog(records)).toMatchObject({
      ok: false,
      at: 3,
      reason: expect.stringContaining('prevHash'),
    });
    // Rewriting every record after it makes a consistent chain: only the head kept elsewhere tells.
    for (let i = 2; i < records.length; i++)
      records[i] = rehash({ ...(records[i] as AuditRecord), prevHash: (records[i - 1] as AuditRecord).hash });
    expect(verifyAuditLog(records)).toEqual({ ok: true, count: 5 });
    expect(verifyAuditLog(records, { head: { seq: last.seq, hash: last.hash } })).toMatchObject({
      ok: false,
    });
  });

  it('detects a deleted line', async () => {
    const { path, lines } = await fiveRecords();
    lines.splice(1, 1);
    await rewrite(path, lines);
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      at: 2,
      reason: expect.stringContaining('deleted'),
    });
    const first = await fiveRecords();
    first.lines.shift();
    await rewrite(first.path, first.lines);
    expect(verifyAuditLog(first.path)).toMatchObject({ ok: false, at: 1 });
  });

  it('detects two swapped lines', async () => {
    const { path, lines } = await fiveRecords();
    [lines[2], lines[3]] = [lines[3] as string, lines[2] as string];
    await rewrite(path, lines);
    expect(verifyAuditLog(path)).toMatchObject({ ok: false, at: 3 });
  });

  it('detects an inserted record', async () => {
    const { path, lines } = await fiveRecords();
    lines.splice(2, 0, lines[1] as string);
    await rewrite(path, lines);
    expect(verifyAuditLog(path)).toMatchObject({ ok: false, at: 3 });
  });

  it('detects a truncated file: a line cut short, or whole records cut off the end (given the known head)', async () => {
    const { path, lines, last } = await fiveRecords();
    const text = `${lines.join('\n')}\n`;
    await writeFile(path, text.slice(0, text.length - 20));
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      at: 5,
      reason: expect.stringContaining('not valid JSON'),
    });
    await rewrite(path, lines.slice(0, 3));
    expect(verifyAuditLog(path, { head: { seq: last.seq, hash: last.hash } })).toMatchObject({
      ok: false,
      at: 4,
      reason: expect.stringContaining('cut off'),
    });
  });

  it('a log reopened on the same file continues the chain, even after a line cut short by a crash', async () => {
    const { path, lines } = await fiveRecords();
    const again = createAuditLog({ sink: jsonlAuditSink(path) });
    expect(again.record({ type: 'breaker', data: { state: 'open' } }).seq).toBe(6);
    await again.close();
    expect(verifyAuditLog(path)).toEqual({ ok: true, count: 6 });
    await writeFile(path, `${lines.join('\n')}\n{"seq":6,"ti`);
    const after = createAuditLog({ sink: jsonlAuditSink(path) });
    after.record({ type: 'breaker', data: { state: 'closed' } });
    await after.close();
    // The damage stays visible where it happened.
    expect(verifyAuditLog(path)).toMatchObject({ ok: false, at: 6 });
  });
});
