import { type PermissionRequest, permissions, type RunContextInfo, type ToolPermissionPolicy } from 'troupe';
import { describe, expect, it } from 'vitest';
import { normalizePermission } from '../../src/policies/tool-permissions.ts';

interface Caller {
  roles: string[];
}

const info = (roles: string[]): RunContextInfo<Caller> => ({
  context: { roles },
  sessionId: 's',
  agent: 'a',
  route: 'a',
  turn: 1,
});
const call = (tool: string): PermissionRequest => ({ tool, args: {}, callId: 'c1' });

describe('tool-permission policies', () => {
  it('byRole lets a role call the tools it lists, every tool with *, and denies the rest saying who', () => {
    const policy = permissions.byRole<Caller>({ admin: ['*'], user: ['search'] }, (context) => context.roles);
    expect(policy(call('search'), info(['user']))).toBe('allow');
    expect(policy(call('delete'), info(['admin']))).toBe('allow');
    expect(policy(call('delete'), info(['user', 'guest']))).toEqual({
      decision: 'deny',
      reason: 'role "user", "guest" may not call "delete"',
    });
    expect(policy(call('search'), info([]))).toEqual({
      decision: 'deny',
      reason: 'a caller without a role may not call "search"',
    });
    // A role name that is a property of every object is no role.
    expect(policy(call('search'), info(['constructor']))).toMatchObject({ decision: 'deny' });
  });

  it('byRole can ask a person instead of denying', () => {
    const policy = permissions.byRole<Caller>({ user: ['search'] }, (context) => context.roles, {
      otherwise: 'ask',
    });
    expect(policy(call('refund'), info(['user']))).toMatchObject({ decision: 'ask' });
  });

  it('all() denies if one denies, else asks if one asks, else allows', async () => {
    const allow: ToolPermissionPolicy = () => 'allow';
    const ask: ToolPermissionPolicy = () => ({ decision: 'ask', reason: 'large' });
    const deny: ToolPermissionPolicy = async () => ({ decision: 'deny', reason: 'tenant' });
    expect(await permissions.all(allow, allow)(call('x'), info([]))).toBe('allow');
    expect(await permissions.all(allow, ask)(call('x'), info([]))).toEqual({
      decision: 'ask',
      reason: 'large',
    });
    expect(await permissions.all(ask, deny)(call('x'), info([]))).toEqual({
      decision: 'deny',
      reason: 'tenant',
    });
  });

  it('an answer that is not a decision denies, saying what it got', () => {
    expect(normalizePermission('allow')).toEqual({ decision: 'allow' });
    expect(normalizePermission({ decision: 'ask', reason: '' })).toEqual({ decision: 'ask' });
    expect(normalizePermission('yes')).toEqual({
      decision: 'deny',
      reason: 'the permission policy gave no decision (allow, deny or ask), got "yes"',
    });
    expect(normalizePermission(undefined)).toMatchObject({ decision: 'deny' });
  });
});
