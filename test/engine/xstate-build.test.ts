import { describe, expect, it } from 'vitest';
import { Actor } from 'xstate';
import { isDevelopmentBuild, xstateDevelopmentBuild } from '../../src/engine/xstate-build.ts';

describe('isDevelopmentBuild(Actor)', () => {
  it("tells XState's development build by the warning in Actor#_send", () => {
    // Vitest loads the development build (the "development" export condition).
    expect(xstateDevelopmentBuild).toBe(true);
    expect(isDevelopmentBuild(Actor)).toBe(true);
    class Production {
      _send(event: unknown) {
        return event;
      }
    }
    expect(isDevelopmentBuild(Production)).toBe(false);
  });

  it('is false, without throwing, when _send is gone or not a function', () => {
    expect(isDevelopmentBuild(class {})).toBe(false);
    const renamed = { prototype: { _send: 'console.warn' } };
    expect(isDevelopmentBuild(renamed)).toBe(false);
  });
});
