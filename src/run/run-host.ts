import { type AnyActorRef, createActor, fromTransition } from 'xstate';

/**
 * The parent of plain runs' agent actors when XState's actor runs them (on XState's interpreter; on the compiled
 * one a run nothing inspects has the engine's own actor, compiled-actor.ts, with no parent). XState gives every root actor an actor system of its own (a registry, a
 * scheduler, inspection: about 2 KB and a dozen closures that live as long as the run); runs without an inspector
 * share this host's system instead, which matters with thousands of runs in flight (bench W2). The host is a
 * trivial actor that ignores what its children report (their done and error events: run() observes each run's
 * actor directly). It holds no children in a snapshot, so nothing is copied per run (a machine that spawns copies
 * its children map on every spawn: O(N²) for N children). A run with an inspector stays a root actor:
 * inspection is per system.
 */
let host: AnyActorRef | undefined;

export function runHost(): AnyActorRef {
  host ??= createActor(fromTransition((state: null) => state, null)).start();
  return host;
}
