import { describe, expect, it } from 'vitest';
import { onAbort } from '../../src/core/abort.ts';

describe('onAbort (one listener per signal, many waiters)', () => {
  it('calls every waiter once when the signal aborts', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    onAbort(controller.signal, () => calls.push('a'));
    onAbort(controller.signal, () => calls.push('b'));
    controller.abort();
    controller.abort();
    expect(calls).toEqual(['a', 'b']);
  });

  it('does not call a waiter that stopped waiting', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const stop = onAbort(controller.signal, () => calls.push('gone'));
    onAbort(controller.signal, () => calls.push('kept'));
    stop();
    controller.abort();
    expect(calls).toEqual(['kept']);
  });

  it('puts a single listener on the signal however many waiters come and go', () => {
    const controller = new AbortController();
    let added = 0;
    const original = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
      added++;
      original(...args);
    }) as AbortSignal['addEventListener'];
    for (let i = 0; i < 100; i++) onAbort(controller.signal, () => undefined)();
    let fired = false;
    onAbort(controller.signal, () => {
      fired = true;
    });
    controller.abort();
    expect(added).toBe(1);
    expect(fired).toBe(true);
  });
});
