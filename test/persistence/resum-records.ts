import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import {
  type ChecksummedTable,
  recordChecksum,
} from '../../src/persistence/stored-format/record-checksum.ts';

/**
 * Recomputes the checksum of every record in a store file, as if what a test wrote into it by hand had been written
 * by the store: the record then gets past the checksum, to the checks of what it says.
 */
export function resumRecords(db: DatabaseSync): void {
  const tables: [ChecksummedTable, string][] = [
    ['sessions', 'id = ?'],
    ['runs', 'session_id = ? AND route = ?'],
    ['journal', 'session_id = ? AND key = ?'],
    ['events', 'session_id = ? AND seq = ?'],
    ['approvals', 'session_id = ? AND call_id = ?'],
  ];
  for (const [table, where] of tables) {
    const update = db.prepare(`UPDATE ${table} SET sum = ? WHERE ${where}`);
    for (const row of db.prepare(`SELECT * FROM ${table}`).all()) {
      const keys = where.split(' AND ').map((part) => row[part.split(' = ')[0] as string] as SQLInputValue);
      update.run(recordChecksum(table, row), ...keys);
    }
  }
}
