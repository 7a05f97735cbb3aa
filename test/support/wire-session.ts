import { afterEach } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import type { ModelDelta, ModelRequest } from '../../src/core/model.ts';
import { sequence, startWireServer, type WireReply, type WireServer } from './wire-server.ts';

/**
 * One wire server per test, closed after it: `serve(...replies)` starts it, `bodyOf(i)` reads the i-th request
 * body the SDK sent, `current()` is the server itself.
 */
export function useWireServer(): {
  serve: (...replies: WireReply[]) => Promise<WireServer>;
  bodyOf: (index: number) => Record<string, unknown>;
  current: () => WireServer;
} {
  let server: WireServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return {
    async serve(...replies) {
      server = await startWireServer(sequence(...replies));
      return server;
    },
    bodyOf: (index) => server?.requests[index]?.body as Record<string, unknown>,
    current() {
      if (!server) throw new Error('no wire server was started in this test');
      return server;
    },
  };
}

/** A model request that records the deltas the provider streams. */
export function recordingRequest(
  messages: Message[],
  extra: Partial<ModelRequest> = {},
): ModelRequest & { deltas: ModelDelta[] } {
  const deltas: ModelDelta[] = [];
  return {
    messages,
    tools: [],
    settings: {},
    signal: new AbortController().signal,
    onDelta: (delta) => deltas.push(delta),
    ...extra,
    deltas,
  };
}
