import * as root from 'troupe';
import * as testing from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/** The root entry is what users build agents with; the machine, the registry and test hooks are in troupe/testing. */
const internals = [
  'agentMachine',
  'agentOutputOf',
  'ToolRegistry',
  'redactingInspector',
  'activeRuntimeCount',
  'resetBreakers',
  'breakerState',
] as const;

describe('entry points', () => {
  it.each(internals)('%s is exported by troupe/testing, not by troupe', (name) => {
    expect(Object.hasOwn(root, name)).toBe(false);
    expect(Object.hasOwn(testing, name)).toBe(true);
  });
});
