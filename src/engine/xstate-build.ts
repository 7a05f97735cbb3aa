import { Actor } from 'xstate';

/**
 * Whether `actorClass` is the Actor of XState's development build (Node picks that build under the "development"
 * export condition, as Vitest does). That build warns about a few deprecated forms while it interprets a machine
 * (wildcards inside an event descriptor, outputs mapped property by property); the compiled interpreter repeats
 * those warnings there, so it behaves like the build it runs beside. Told apart by the development build's warning
 * in `Actor#_send` (a private member: the runtime check, runtime-gate.ts, requires it before the compiled
 * interpreter runs).
 */
export function isDevelopmentBuild(actorClass: { prototype: object }): boolean {
  const send = (actorClass.prototype as { _send?: unknown })._send;
  return typeof send === 'function' && Function.prototype.toString.call(send).includes('console.warn');
}

/** Whether the loaded xstate is its development build (isDevelopmentBuild). */
export const xstateDevelopmentBuild: boolean = isDevelopmentBuild(Actor);
