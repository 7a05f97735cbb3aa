import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { EventBus, type EventDelivery } from '../../src/core/event-bus.ts';

/** V8's own check of where an object lives (natives syntax, enabled for the functions parsed after this). */
function youngGenerationCheck(): (value: unknown) => boolean {
  setFlagsFromString('--allow-natives-syntax');
  return new Function('value', 'return %InYoungGeneration(value)') as (value: unknown) => boolean;
}

describe("the event bus's delivery, as its filter gets it", () => {
  // A function literal stored straight into a property is allocated in the old generation, from where it would keep
  // the bus and its listeners reachable to young-generation collections until a full one.
  it('is allocated young, and is the same function for every event', () => {
    const inYoungGeneration = youngGenerationCheck();
    const bus = new EventBus('s1', systemClock);
    const seen: string[] = [];
    bus.subscribe((event) => seen.push(`${event.type} ${event.seq}`));
    const deliveries: EventDelivery[] = [];
    bus.setFilter((agent, type, data, origin, deliver) => {
      deliveries.push(deliver);
      deliver(agent, type, data, origin);
    });
    bus.emit('a', 'tool_retry', { callId: 'c1', name: 't', attempt: 1, error: 'down' });
    bus.emit('a', 'tool_retry', { callId: 'c2', name: 't', attempt: 2, error: 'down' });
    expect(seen).toEqual(['tool_retry 0', 'tool_retry 1']);
    expect(deliveries[1]).toBe(deliveries[0]);
    expect(inYoungGeneration(deliveries[0])).toBe(true);
  });
});
