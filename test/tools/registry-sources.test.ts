import { tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/tool.ts';
import type { ToolSource, ToolSourceScope } from '../../src/tools/tool-source.ts';

const make = (name: string): Tool =>
  tool({ name, description: name, input: z.object({}), execute: () => name }) as Tool;

/** A source whose list the test sets; `prepare` lists what `next` holds. */
class FakeSource implements ToolSource {
  readonly kind = 'tool-source' as const;
  readonly name = 'fake';
  version = 0;
  next: Tool[] = [];
  #tools: Tool[] = [];
  prepared: string[] = [];
  current(): readonly Tool[] {
    return this.#tools;
  }
  isReady(): boolean {
    return this.version > 0;
  }
  async prepare(scope: ToolSourceScope): Promise<void> {
    this.prepared.push(scope.sessionId);
    this.#tools = this.next;
    this.version++;
  }
}

describe('a tool registry with tool sources', () => {
  const scope = { sessionId: 's', signal: new AbortController().signal };

  it("stands for an unlisted source with a name no call can reach, then offers the source's tools after the agent's own", async () => {
    const source = new FakeSource();
    source.next = [make('remote'), make('local')];
    const registry = new ToolRegistry([make('local'), source]);
    expect(registry.names).toEqual(['local', 'source:fake']);
    expect(registry.find('source:fake')).toBeUndefined();
    await registry.prepare(scope);
    expect(registry.prepare(scope)).toBeUndefined();
    expect(source.prepared).toEqual(['s']);
    // The agent's own "local" wins over the source's tool of the same name.
    expect(registry.names).toEqual(['local', 'remote']);
    expect(registry.specs().map((spec) => spec.name)).toEqual(['local', 'remote']);
    expect(await registry.get('local').execute({}, {} as never)).toBe('local');
    expect(registry.specs(['remote']).map((spec) => spec.name)).toEqual(['local']);
  });

  it('follows a source whose list changed', async () => {
    const source = new FakeSource();
    source.next = [make('a')];
    const registry = new ToolRegistry([source]);
    await registry.prepare(scope);
    const first = registry.names;
    expect(first).toEqual(['a']);
    expect(registry.names).toBe(first);
    source.next = [make('a'), make('b')];
    await source.prepare(scope);
    expect(registry.names).toEqual(['a', 'b']);
    expect(registry.has('b')).toBe(true);
  });

  it('refuses a source listed twice', () => {
    const source = new FakeSource();
    expect(() => new ToolRegistry([source, source])).toThrow(/listed twice/);
  });
});
