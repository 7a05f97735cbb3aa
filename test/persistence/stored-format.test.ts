import { describe, expect, it } from 'vitest';
import type { AgentCheckpoint } from '../../src/machines/agent.ts';
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
