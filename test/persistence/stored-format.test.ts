import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { AgentCheckpoint } from '../../src/machines/agent.ts';
import {
  checksummedColumns,
  checksumOfValues,
  type RecordColumns,
  recordChecksum,
} from '../../src/persistence/stored-format/record-checksum.ts';
import {
  fromStoredCheckpoint,
  type StoredAgentCheckpoint,
  toStoredCheckpoint,
} from '../../src/persistence/stored-format/stored-checkpoint.ts';
import { fromStoredRestore, toStoredRestore } from '../../src/persistence/stored-format/stored-restore.ts';
import { checkpoint, sessionRow } from './fixtures.ts';

describe('the stored format is mapped to and from the machines, field by field', () => {
  it('a checkpoint goes to the store and back unchanged', () => {
    const machine = checkpoint() as AgentCheckpoint;
    expect(fromStoredCheckpoint(toStoredCheckpoint(machine))).toEqual(machine);
    const restore = sessionRow('s1').turn?.session;
    if (!restore) throw new Error('the fixture has a turn');
    expect(toStoredRestore(fromStoredRestore(restore))).toEqual(restore);
  });

  it('only the stored fields are written: what else the machine holds stays out of the store', () => {
    const machine = { ...(checkpoint() as AgentCheckpoint), scratch: 'not stored' } as AgentCheckpoint;
    expect(Object.hasOwn(toStoredCheckpoint(machine), 'scratch')).toBe(false);
  });

  it('a checkpoint stored before an optional field existed resumes with its default', () => {
    const { retryCount: _retry, approvals: _approvals, ...older } = checkpoint() as StoredAgentCheckpoint;
    const resumed = fromStoredCheckpoint(older);
    expect(resumed.retryCount).toBe(0);
    expect(resumed.approvals).toBeNull();
  });
});

describe('record checksums', () => {
  /** The checksum fed column by column, each piece its own CRC-32 step: the definition files are written with. */
  function piecewise(table: keyof typeof checksummedColumns, record: RecordColumns): number {
    let sum = crc32(table);
    for (const name of checksummedColumns[table]) {
      const value = record[name];
      if (typeof value === 'string') {
        sum = crc32(`|s${value.length}:`, sum);
        sum = crc32(value, sum);
      } else if (typeof value === 'number' || typeof value === 'bigint')
        sum = crc32(`|n${String(value)}`, sum);
      else if (value === undefined || value === null) sum = crc32('|z', sum);
      else sum = crc32(`|b${String(value)}`, sum);
    }
    return sum;
  }

  it('are the same as fed column by column, also for text with lone surrogates and other scripts', () => {
    const texts = [
      '',
      'plain',
      '\ud800',
      '\udc00tail',
      'end\ud83d',
      '😀 ünïcødé 漢字',
      '{"a":[1,2]}',
      '|s3:',
      // Texts long enough to be hashed where they are, not copied into the input.
      `${'x'.repeat(400)}\ud800`,
      `\udc00${'😀 ü'.repeat(120)}`,
      '{"a":1}'.repeat(300),
    ];
    for (const data of texts)
      for (const agent of texts) {
        const record = {
          session_id: agent,
          first_seq: 1,
          seq: 3,
          doc: data,
          time: 1.5,
          agent,
          route: data,
          depth: 0,
          type: 'phase',
          origin: null,
          data,
        };
        expect(recordChecksum('events', record)).toBe(piecewise('events', record));
        expect(
          checksumOfValues('events', ['before', ...checksummedColumns.events.map((name) => record[name])], 1),
        ).toBe(piecewise('events', record));
      }
    // Numbers as String() writes them: integers up to the largest safe one, negative ones, -0, fractions, huge ones.
    for (const seq of [
      0,
      7,
      10,
      -1,
      -0,
      2 ** 31,
      1795779212626,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      1.5,
      1e21,
      2 ** 60,
      Number.NaN,
      12n,
    ]) {
      const record = {
        session_id: 's',
        first_seq: seq,
        seq,
        doc: '',
        time: seq,
        agent: 'a',
        route: 'r',
        depth: seq,
        type: 't',
        origin: null,
        data: '',
      };
      expect(recordChecksum('events', record)).toBe(piecewise('events', record));
    }
    const blob = { session_id: 's', route: 'r', doc: new Uint8Array([1, 2]) };
    expect(recordChecksum('runs', blob)).toBe(piecewise('runs', blob));
  });
});
