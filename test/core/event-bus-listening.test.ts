import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { EventBus } from '../../src/core/event-bus.ts';

/** `listening` follows the bus's listeners: emitters skip building an event's data while it is false. */
describe("the event bus's listening", () => {
  it('is true exactly while a listener is subscribed', () => {
    const bus = new EventBus('s1', systemClock);
    expect(bus.listening).toBe(false);
    const seen: string[] = [];
    const stopFirst = bus.subscribe((event) => seen.push(`first ${event.type}`));
    const stopSecond = bus.subscribe((event) => seen.push(`second ${event.type}`));
    expect(bus.listening).toBe(true);
    stopFirst();
    expect(bus.listening).toBe(true);
    bus.emit('a', 'tool_retry', { callId: 'c1', name: 't', attempt: 1, error: 'down' });
    stopSecond();
    expect(bus.listening).toBe(false);
    bus.emit('a', 'tool_retry', { callId: 'c2', name: 't', attempt: 1, error: 'down' });
    expect(seen).toEqual(['second tool_retry']);
  });

  it('is false once the bus is cleared', () => {
    const bus = new EventBus('s1', systemClock);
    bus.subscribe(() => {});
    expect(bus.listening).toBe(true);
    bus.clear();
    expect(bus.listening).toBe(false);
  });
});
