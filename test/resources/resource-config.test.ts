import { ConfigError, createResourceManager } from 'troupe';
import { describe, expect, it } from 'vitest';

describe('tenant budgets by name', () => {
  it('a tenant named like an Object.prototype member gets the per-tenant budget, not a prototype property', () => {
    const manager = createResourceManager({
      budgets: { perTenant: { tokens: 100 }, tenants: { acme: { tokens: 5 } } },
    });
    for (const tenant of ['constructor', 'toString', 'acme']) {
      manager.openRun({ session: tenant, tenant, provider: 'p', model: 'm' });
      expect(manager.usage({ tenant }).tenant?.tokensLimit).toBe(tenant === 'acme' ? 5 : 100);
    }
    manager.stop();
  });
});

describe('the output limit of calls under a budget', () => {
  it('maxOutputTokens must be a whole number > 0', () => {
    for (const maxOutputTokens of [0, -1, 1.5, Number.NaN])
      expect(() => createResourceManager({ maxOutputTokens })).toThrow(ConfigError);
    expect(() => createResourceManager({ maxOutputTokens: 'many' as never })).toThrow(
      /maxOutputTokens must be a whole number > 0/,
    );
    createResourceManager({ maxOutputTokens: 1 }).stop();
  });
});
