/**
 * Names of budget scopes in the manager's state. A tenant and a run may share a name ("acme"), so each kind gets
 * its own prefix.
 */
export const tenantScope = (tenant: string): string => `tenant:${tenant}`;
export const sessionScope = (session: string): string => `session:${session}`;

/** The session a scope name belongs to (the name itself for a scope that is not a session's). */
export function sessionOf(scope: string): string {
  return scope.startsWith('session:') ? scope.slice('session:'.length) : scope;
}
