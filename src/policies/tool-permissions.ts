import type { JsonValue } from '../core/json.ts';
import type { RunContextInfo } from '../run/run-context.ts';

/** One tool call a permission policy decides on. `args` are the model's arguments, as it sent them. */
export interface PermissionRequest {
  readonly tool: string;
  readonly args: JsonValue;
  readonly callId: string;
}

/** What a policy may decide: the call runs, it is refused (the model gets an error result), or a person decides. */
export type PermissionDecisionKind = 'allow' | 'deny' | 'ask';

/** A decision, with a reason the model (for a denial) and the audit log read. */
export type PermissionDecision =
  | PermissionDecisionKind
  | { readonly decision: PermissionDecisionKind; readonly reason?: string | undefined };

/**
 * Decides, before a tool runs, whether this caller may run this call: `allow`, `deny` or `ask` (the call waits for a
 * person exactly as a tool with `needsApproval`). It gets the run context (the caller's roles, tenant...) in
 * `info.context`. A policy that throws, rejects or answers something else denies the call (fail closed).
 */
export type ToolPermissionPolicy<TContext = unknown> = {
  decide(
    call: PermissionRequest,
    info: RunContextInfo<TContext>,
  ): PermissionDecision | Promise<PermissionDecision>;
}['decide'];

/** A decision in one shape. */
export interface NormalizedPermission {
  decision: PermissionDecisionKind;
  reason?: string;
}

const decisionKinds: ReadonlySet<unknown> = new Set(['allow', 'deny', 'ask']);

/** A policy's answer in one shape; anything that is not a decision is a denial saying so (fail closed). */
export function normalizePermission(answer: unknown): NormalizedPermission {
  if (typeof answer === 'string' && decisionKinds.has(answer))
    return { decision: answer as PermissionDecisionKind };
  if (
    typeof answer === 'object' &&
    answer !== null &&
    decisionKinds.has((answer as { decision?: unknown }).decision)
  ) {
    const { decision, reason } = answer as { decision: PermissionDecisionKind; reason?: unknown };
    return typeof reason === 'string' && reason !== '' ? { decision, reason } : { decision };
  }
  return {
    decision: 'deny',
    reason: `the permission policy gave no decision (allow, deny or ask), got ${describe(answer)}`,
  };
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Which tools a role may call: tool names, or `'*'` for every tool. */
export type RoleTable = Readonly<Record<string, readonly string[]>>;

export interface ByRoleOptions {
  /** What happens to a call no role of the caller lists: `deny` (default) or `ask` a person. */
  otherwise?: 'deny' | 'ask' | undefined;
}

/**
 * A policy from a table of roles: `byRole({ admin: ['*'], user: ['search'] }, (context) => context.role)`. The
 * caller's role (or roles) come from the run context; a call runs when one of them lists the tool (or `'*'`),
 * otherwise it is denied (or, with `otherwise: 'ask'`, a person decides).
 */
function byRole<TContext>(
  table: RoleTable,
  roleOf: (context: TContext) => string | readonly string[] | undefined,
  options: ByRoleOptions = {},
): ToolPermissionPolicy<TContext> {
  const allowed = new Map<string, ReadonlySet<string>>();
  for (const role of Object.keys(table)) allowed.set(role, new Set(table[role]));
  const otherwise = options.otherwise ?? 'deny';
  return (call, info) => {
    const given = roleOf(info.context);
    const roles = given === undefined ? [] : typeof given === 'string' ? [given] : given;
    for (const role of roles) {
      const tools = allowed.get(role);
      if (tools && (tools.has('*') || tools.has(call.tool))) return 'allow';
    }
    const who =
      roles.length === 0 ? 'a caller without a role' : `role ${roles.map((role) => `"${role}"`).join(', ')}`;
    return { decision: otherwise, reason: `${who} may not call "${call.tool}"` };
  };
}

/**
 * Several policies as one: every policy is asked; one denial denies, else one `ask` asks, else the call runs. The
 * first denial's (or ask's) reason is kept.
 */
function all<TContext>(
  ...policies: readonly ToolPermissionPolicy<TContext>[]
): ToolPermissionPolicy<TContext> {
  return async (call, info) => {
    let asked: NormalizedPermission | undefined;
    for (const policy of policies) {
      const verdict = normalizePermission(await policy(call, info));
      if (verdict.decision === 'deny') return verdict;
      if (verdict.decision === 'ask') asked ??= verdict;
    }
    return asked ?? 'allow';
  };
}

/** Helpers to build tool-permission policies (see defineAgent's `permissions`). */
export const permissions = Object.freeze({ byRole, all });
