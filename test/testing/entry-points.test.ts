import * as root from 'troupe';
import * as testing from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * The root entry is what users build agents with; the machine, the termination policies its guards apply, the
 * registry and test hooks are in troupe/testing.
 */
const internals = [
  'agentMachine',
  'agentOutputOf',
  'ToolRegistry',
  'redactingInspector',
  'activeRuntimeCount',
  'resetBreakers',
  'breakerState',
  'createTerminationPolicy',
  'standardTerminationPolicy',
  'withDuplicateDetection',
  'withToolCallCap',
  'stepLimitReached',
  'decodeRetriesLeft',
  'toolCallSignature',
] as const;

/** What a user composes termination from: stop conditions, as data. */
const stopConditions = ['stepCountIs', 'toolCallCountIs', 'duplicateToolCallCountIs'] as const;

describe('entry points', () => {
  it.each(internals)('%s is exported by troupe/testing, not by troupe', (name) => {
    expect(Object.hasOwn(root, name)).toBe(false);
    expect(Object.hasOwn(testing, name)).toBe(true);
  });

  it.each(stopConditions)('%s is exported by troupe', (name) => {
    expect(Object.hasOwn(root, name)).toBe(true);
  });
});
