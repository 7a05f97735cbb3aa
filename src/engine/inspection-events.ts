import type { EngineEvent, EngineScope, EngineSnapshot, EngineTransition } from './xstate-shapes.ts';

/**
 * The inspection events the compiled interpreter reports itself (`@xstate.microstep`, and `@xstate.action` for an
 * emit), without building them when nobody inspects. XState's system hands observers a copy of each inspection event
 * (`{ ...event, rootId }`) and builds none when it has no observer, so the interpreter passes one reused object per
 * kind whose parts that must be new for each observer (the transitions array, the action record) are getters read
 * by that copy. An observer sees what XState's own interpreter gives it; a run without an inspector allocates
 * nothing for them. (The runtime check, runtime-gate.ts, requires that copy before the compiled interpreter runs.)
 */
let microstepTransition: EngineTransition | undefined;
const microstep: Record<string, unknown> = {
  type: '@xstate.microstep',
  actorRef: undefined,
  event: undefined,
  snapshot: undefined,
};
Object.defineProperty(microstep, '_transitions', {
  enumerable: true,
  get: () => (microstepTransition ? [microstepTransition] : []),
});

let emitted: unknown;
const emitAction: Record<string, unknown> = { type: '@xstate.action', actorRef: undefined };
Object.defineProperty(emitAction, 'action', {
  enumerable: true,
  get: () => ({ type: 'xstate.emit', params: { event: emitted } }),
});

/**
 * The `_sendInspectionEvent` of an actor system that nothing inspects and nothing can inspect later (the engine's own
 * actor's). The reports below are skipped on such a system: it would drop them anyway.
 */
export function ignoreInspection(_event: unknown): void {}

/**
 * Reports a microstep: the event it took, the snapshot it made and the transition it took (if one). The reused
 * object is filled for one report and emptied after it (it keeps nothing alive); a report made by an observer of
 * another finds that one already copied.
 */
export function inspectMicrostep(
  scope: EngineScope,
  event: EngineEvent,
  snapshot: EngineSnapshot,
  transition: EngineTransition | undefined,
): void {
  const system = scope.system;
  if (system._sendInspectionEvent === ignoreInspection) return;
  microstep.actorRef = scope.self;
  microstep.event = event;
  microstep.snapshot = snapshot;
  microstepTransition = transition;
  try {
    system._sendInspectionEvent(microstep);
  } finally {
    microstep.actorRef = undefined;
    microstep.event = undefined;
    microstep.snapshot = undefined;
    microstepTransition = undefined;
  }
}

/** Reports that an emit action ran (XState's action executor reports it so): its parameters are `{ event }`. */
export function inspectEmit(scope: EngineScope, event: unknown): void {
  const system = scope.system;
  if (system._sendInspectionEvent === ignoreInspection) return;
  emitAction.actorRef = scope.self;
  emitted = event;
  try {
    system._sendInspectionEvent(emitAction);
  } finally {
    emitAction.actorRef = undefined;
    emitted = undefined;
  }
}
