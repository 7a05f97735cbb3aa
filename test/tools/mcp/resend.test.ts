import { createServer } from 'node:net';
import { defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.ts';
import { neverReachedServer } from '../../../src/tools/mcp/failures.ts';
import { type InjectedFault, TestHttpServer } from './http-server.ts';

const forms = [
  { form: 'stateless', faults: ['reset', 'status-502', 'malformed', 'no-result-type'] },
  { form: 'stateful', faults: ['reset', 'status-502', 'malformed'] },
] as const;

/** One run whose model calls `name` once, with the agent's default of 2 tool retries. */
async function callOnce(server: ReturnType<typeof mcpServer>, name: string, args: JsonObject) {
  const model = scriptedModel([{ toolCalls: [{ id: 'c1', name, args }] }, { text: 'done' }]);
  const agent = defineAgent({ name: 'payer', instructions: '', model, tools: [server] });
  const result = await run(agent, 'pay');
  return result.history.find((message) => message.role === 'tool');
}

describe.each(forms)('a tool that is not idempotent, $form server', ({ form, faults }) => {
  let testServer: TestHttpServer;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function started(): Promise<TestHttpServer> {
    testServer = new TestHttpServer(form);
    await testServer.start();
    cleanups.push(() => testServer.stop());
    return testServer;
  }

  it.each(faults)('runs exactly once when the answer is lost to %s', async (fault: InjectedFault) => {
    await started();
    const server = mcpServer({ url: testServer.url, reconnect: { attempts: 2, initialDelayMs: 10 } });
    cleanups.push(() => server.close());
    await server.connect();
    testServer.faults.push(fault);
    const message = await callOnce(server, 'charge', { amount: 5 });
    expect(testServer.log.calls.filter((call) => call === 'charge:5')).toHaveLength(1);
    if (fault !== 'no-result-type') {
      expect(message).toMatchObject({ isError: true });
      expect(message?.content).toContain('after 1 attempt(s)');
    }
  });

  it('runs exactly once when the call times out', async () => {
    await started();
    const server = mcpServer({ url: testServer.url, timeoutMs: 300 });
    cleanups.push(() => server.close());
    const message = await callOnce(server, 'charge', { amount: 7, hold: true });
    expect(message).toMatchObject({ isError: true });
    expect(testServer.log.calls.filter((call) => call === 'charge:7')).toHaveLength(1);
  });

  it('an idempotent tool is sent again after the same failure', async () => {
    await started();
    const server = mcpServer({ url: testServer.url, reconnect: { attempts: 2, initialDelayMs: 10 } });
    cleanups.push(() => server.close());
    await server.connect();
    testServer.faults.push('status-502');
    const message = await callOnce(server, 'echo', { text: 'again' });
    expect(message).toMatchObject({ content: 'echo: again', isError: false });
    expect(testServer.log.calls.filter((call) => call === 'echo:again')).toHaveLength(2);
  });
});

describe('a tool that is not idempotent, failures that prove it never ran', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('is sent again on a new session when the server forgot the session (404), and runs once', async () => {
    const testServer = new TestHttpServer('stateful');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    await server.connect();
    testServer.faults.push('expire');
    const message = await callOnce(server, 'charge', { amount: 9 });
    expect(message).toMatchObject({ content: 'charged 9', isError: false });
    expect(testServer.log.calls.filter((call) => call === 'charge:9')).toHaveLength(1);
    expect(testServer.unknownSessions).toBe(1);
  });

  it('an input_required result is the server asking, answered to the model, never sent again', async () => {
    const testServer = new TestHttpServer('stateless');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    // Even a tool marked idempotent, with retries to spare: the same call would get the same question.
    const server = mcpServer({ url: testServer.url, maxRetries: 3 });
    cleanups.push(() => server.close());
    await server.connect();
    testServer.faults.push('input-required');
    const message = await callOnce(server, 'echo', { text: 'form' });
    expect(message).toMatchObject({ isError: true });
    expect(message?.content).toContain('asked for input');
    expect(testServer.log.calls.filter((call) => call === 'echo:form')).toHaveLength(1);
  });

  it('a server that refuses to run a tool without a capability is answered, not retried', async () => {
    const testServer = new TestHttpServer('stateless');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    const server = mcpServer({ url: testServer.url, maxRetries: 3 });
    cleanups.push(() => server.close());
    const message = await callOnce(server, 'confirm_charge', {});
    expect(message).toMatchObject({ isError: true });
    expect(testServer.log.calls.filter((call) => call === 'confirm_charge')).toHaveLength(1);
  });

  it('a refused connection is told apart from a reset after sending', async () => {
    // A port nobody listens on: the request is never written.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const refused = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', body: '{}' }).catch(
      (error: unknown) => error,
    );
    expect(neverReachedServer(refused)).toBe(true);
    // A server that reads the request and drops the connection: it may have acted on it.
    const dropper = createServer((socket) => socket.once('data', () => socket.destroy()));
    await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => dropper.close(() => resolve())));
    const reset = await fetch(`http://127.0.0.1:${(dropper.address() as { port: number }).port}/mcp`, {
      method: 'POST',
      body: '{}',
    }).catch((error: unknown) => error);
    expect(reset).toBeInstanceOf(TypeError);
    expect(neverReachedServer(reset)).toBe(false);
  });
});
