import { and, not, or } from 'xstate';
import type { EngineEvent, EngineSnapshot } from './xstate-shapes.ts';

/** A guard made ready to evaluate: whether it passes for this context, event and snapshot. */
export type GuardTest = (context: unknown, event: EngineEvent, snapshot: EngineSnapshot) => boolean;

type GuardFunction = ((args: { context: unknown; event: unknown }, params: unknown) => boolean) & {
  check?: (snapshot: EngineSnapshot, args: { context: unknown; event: unknown }, guard: unknown) => boolean;
  guards?: readonly unknown[];
};

/** XState's own checks of `and`, `or` and `not` (shared functions: every such guard carries the same one). */
const checkAnd = (and([]) as unknown as GuardFunction).check;
const checkOr = (or([]) as unknown as GuardFunction).check;
const checkNot = (not(() => true) as unknown as GuardFunction).check;

/**
 * XState's evaluateGuard, resolved once per guard instead of at every evaluation: a guard is an inline function, a
 * name from the machine's `guards`, or `{ type, params }`. What XState looks up and tests at each evaluation (the
 * implementation by name, whether it carries params, whether it is a built-in) is decided here once, and `and`,
 * `or` and `not` evaluate their guards in XState's order (first failing or passing one ends the evaluation) without
 * a callback and an arguments object per inner guard. Other built-ins (`stateIn`) run XState's own `check`. A name
 * without an implementation throws XState's error when it is evaluated, not before.
 */
export class GuardTests {
  readonly #tests = new Map<unknown, GuardTest>();

  constructor(private readonly guards: Record<string, unknown>) {}

  /** The test of `guard` (one per guard value: a name, an object or a function). */
  of(guard: unknown): GuardTest {
    let test = this.#tests.get(guard);
    if (!test) {
      test = this.#compile(guard);
      this.#tests.set(guard, test);
    }
    return test;
  }

  #compile(guard: unknown): GuardTest {
    const isInline = typeof guard === 'function';
    const name = isInline ? '' : typeof guard === 'string' ? guard : (guard as { type: string }).type;
    // A plain object lookup, as in XState: the names come from the machine's own config.
    const resolved = (isInline ? guard : this.guards[name]) as GuardFunction | undefined;
    if (!isInline && !resolved)
      return () => {
        throw new Error(`Guard '${name}' is not implemented.'.`);
      };
    if (typeof resolved !== 'function') {
      // A name whose implementation is itself a name or `{ type, params }`: resolved again when evaluated.
      return (context, event, snapshot) => this.of(resolved)(context, event, snapshot);
    }
    const raw =
      !isInline && typeof guard === 'object' && guard !== null && 'params' in guard
        ? (guard as { params: unknown }).params
        : undefined;
    const check = 'check' in resolved ? resolved.check : undefined;
    if (!check) {
      if (typeof raw === 'function')
        return (context, event) => resolved(guardArgs(context, event), raw({ context, event }));
      // The usual guard, a name without params: the arguments' reuse written out (a call fewer per evaluation,
      // which is most of its cost while the step runs in V8's baseline tiers).
      return (context, event) => {
        if (lastContext !== context || lastEvent !== event) {
          lastArgs = { context, event };
          lastContext = context;
          lastEvent = event;
        }
        return resolved(lastArgs, raw);
      };
    }
    // XState computes a built-in's params too (and ignores them): a params function still runs.
    if (typeof raw === 'function')
      return (context, event, snapshot) => {
        raw({ context, event });
        return check(snapshot, guardArgs(context, event), resolved);
      };
    const inner = resolved.guards;
    if (Array.isArray(inner) && (check === checkAnd || check === checkOr || check === checkNot)) {
      let tests: GuardTest[] | undefined;
      const testsOf = () => {
        tests ??= inner.map((each) => this.of(each));
        return tests;
      };
      if (check === checkNot)
        return (context, event, snapshot) =>
          !((tests ?? testsOf())[0] as GuardTest)(context, event, snapshot);
      if (check === checkAnd)
        return (context, event, snapshot) => {
          const all = tests ?? testsOf();
          const count = all.length;
          for (let index = 0; index < count; index++)
            if (!(all[index] as GuardTest)(context, event, snapshot)) return false;
          return true;
        };
      return (context, event, snapshot) => {
        const any = tests ?? testsOf();
        const count = any.length;
        for (let index = 0; index < count; index++)
          if ((any[index] as GuardTest)(context, event, snapshot)) return true;
        return false;
      };
    }
    return (context, event, snapshot) => check(snapshot, guardArgs(context, event), resolved);
  }
}

/**
 * The `{ context, event }` a guard receives. XState makes one per evaluation; the guards of one selection see the
 * same pair, so the last one is reused while it still holds that pair (guards only read it). The pair it holds is
 * kept beside it too: comparing module variables costs no property reads, which are inline-cache calls while a
 * step runs in V8's baseline tiers.
 */
let lastArgs: { context: unknown; event: EngineEvent } = { context: undefined, event: { type: '' } };
let lastContext: unknown = lastArgs.context;
let lastEvent: EngineEvent = lastArgs.event;

function guardArgs(context: unknown, event: EngineEvent): { context: unknown; event: EngineEvent } {
  if (lastContext !== context || lastEvent !== event) {
    lastArgs = { context, event };
    lastContext = context;
    lastEvent = event;
  }
  return lastArgs;
}
