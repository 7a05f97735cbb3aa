import { describe, expect, it } from 'vitest';
import { AbortWaiters, onAbort } from '../../src/core/abort.ts';

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

  it('wakes waiters in the order they came, whichever stopped waiting in between, and each once', () => {
    const waiters = new AbortWaiters();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const stopA = waiters.add(a);
    waiters.add(() => calls.push('b'));
    stopA();
    waiters.add(() => calls.push('c'));
    const d = () => calls.push('d');
    waiters.add(d);
    waiters.add(d);
    const stopE = waiters.add(() => calls.push('e'));
    stopE();
    stopE();
    waiters.wakeAll();
    waiters.wakeAll();
    expect(calls).toEqual(['b', 'c', 'd']);
    waiters.add(() => calls.push('late'));
    expect(calls).toEqual(['b', 'c', 'd', 'late']);
  });

  it('reuses its place for the usual single waiter without losing one that comes meanwhile', () => {
    const waiters = new AbortWaiters();
    const calls: string[] = [];
    for (let i = 0; i < 3; i++) waiters.add(() => calls.push(`gone ${i}`))();
    const stopFirst = waiters.add(() => calls.push('first'));
    waiters.add(() => calls.push('second'));
    stopFirst();
    waiters.add(() => calls.push('third'));
    waiters.wakeAll();
    expect(calls).toEqual(['second', 'third']);
  });

  it('wakes a listener object once, in order with callbacks, unless it was removed; a late one at once', () => {
    const waiters = new AbortWaiters();
    const calls: string[] = [];
    const listener = { aborted: () => calls.push('listener') };
    const removed = { aborted: () => calls.push('removed') };
    waiters.listen(removed);
    waiters.listen(listener);
    waiters.listen(listener);
    waiters.add(() => calls.push('callback'));
    waiters.remove(removed);
    waiters.wakeAll();
    expect(calls).toEqual(['listener', 'callback']);
    waiters.listen({ aborted: () => calls.push('late') });
    expect(calls).toEqual(['listener', 'callback', 'late']);
  });
});
