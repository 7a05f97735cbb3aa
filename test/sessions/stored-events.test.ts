import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, createAgentSystem, createSqliteStore, defineAgent, type RunEvent } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'troupe-stored-events-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const greeter = () =>
  defineAgent({
    name: 'greeter',
    instructions: '',
    model: scriptedModel([{ text: 'hello' }, { text: 'bye' }]),
  });

describe("system.events(sessionId, { after }): one session's events, from wherever they are", () => {
  it("lets a restarted server replay a finished session's events from the store, after a seq, to the end", async () => {
    const file = join(dir, 'replay.db');
    const first = createAgentSystem({ store: createSqliteStore(file) });
    const session = first.spawn(greeter(), 'hi', { sessionId: 'chat-1' });
    await session.result;
    await session.send('thanks');
    await session.stop();
    await first.shutdown();

    // The next process: nothing restored, nothing running; the conversation is over.
    const second = createAgentSystem({ store: createSqliteStore(file) });
    const replayed = await collect(second.events('chat-1'));
    expect(replayed.map((event) => event.seq)).toEqual(replayed.map((_, index) => index));
    expect(replayed.filter((event) => event.type === 'run_end')).toHaveLength(2);
    expect(replayed.at(-1)?.type).toBe('run_end');
    const after = 3;
    const rest = await collect(second.events('chat-1', { after }));
    expect(rest).toEqual(replayed.filter((event) => event.seq > after));
    await second.shutdown();
  });

  it('gives the live events of a session running in this process, as session.events({ after }) does', async () => {
    const system = createAgentSystem();
    const session = system.spawn(greeter(), 'hi', { sessionId: 'live-1' });
    await session.result;
    const stop = new AbortController();
    const seen: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of system.events('live-1', { after: -1, signal: stop.signal })) {
        seen.push(event);
        if (event.type === 'run_end' && seen.filter((e) => e.type === 'run_end').length === 2) stop.abort();
      }
    })();
    await session.send('thanks');
    await reading;
    expect(seen.filter((event) => event.type === 'run_start')).toHaveLength(2);
    await system.shutdown();
  });

  it('ends at once for a signal aborted before the first read, running here or not', async () => {
    const system = createAgentSystem();
    const session = system.spawn(greeter(), 'hi', { sessionId: 'aborted-1' });
    await session.result;
    expect(await collect(system.events('aborted-1', { signal: AbortSignal.abort() }))).toEqual([]);
    expect(await collect(session.events({ after: -1, signal: AbortSignal.abort() }))).toEqual([]);
    await system.shutdown();
  });

  it('refuses an id the store holds nothing for, and a bad seq, with a ConfigError', async () => {
    const system = createAgentSystem({ store: createSqliteStore(join(dir, 'empty.db')) });
    await expect(collect(system.events('typo'))).rejects.toThrow(ConfigError);
    await expect(collect(system.events('typo'))).rejects.toThrow(/holds nothing for session "typo"/);
    expect(() => system.events('typo', { after: 1.5 })).toThrow(ConfigError);
    await system.shutdown();
  });
});
