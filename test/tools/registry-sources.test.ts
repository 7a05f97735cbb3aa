import { tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { ToolNameCollisionError } from '../../src/tools/tool-name-collision-error.ts';
import type { ToolSource, ToolSourceScope } from '../../src/tools/tool-source.ts';

const make = (name: string): Tool =>
  tool({ name, description: name, input: z.object({}), execute: () => name }) as Tool;

/** A source whose list the test sets; `prepare` lists what `next` holds. */
class FakeSource implements ToolSource {
  readonly kind = 'tool-source' as const;
  version = 0;
  constructor(readonly name = 'fake') {}
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
    source.next = [make('remote')];
    const registry = new ToolRegistry([make('local'), source]);
    expect(registry.names).toEqual(['local', 'source:fake']);
    expect(registry.find('source:fake')).toBeUndefined();
    await registry.prepare(scope);
    expect(registry.prepare(scope)).toBeUndefined();
    expect(source.prepared).toEqual(['s']);
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

  it("fails the preparation, naming both and a prefix, when a source lists the name of one of the agent's own tools", async () => {
    const source = new FakeSource('files');
    source.next = [make('remote'), make('local')];
    const registry = new ToolRegistry([make('local'), source]);
    const failure = await registry.prepare(scope)?.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ToolNameCollisionError);
    expect((failure as ToolNameCollisionError).toolName).toBe('local');
    expect((failure as ToolNameCollisionError).sources).toEqual(['agent', 'files']);
    expect((failure as Error).message).toMatch(/agent's own tools.*"files".*prefix: 'files_'/);
    // Listed already, the collision still fails every later preparation.
    await expect(registry.prepare(scope)).rejects.toBeInstanceOf(ToolNameCollisionError);
  });

  it('fails the preparation, naming both sources, when two sources list the same name', async () => {
    const first = new FakeSource('alpha');
    const second = new FakeSource('beta');
    first.next = [make('read_file')];
    second.next = [make('read_file'), make('write_file')];
    const registry = new ToolRegistry([first, second]);
    const failure = await registry.prepare(scope)?.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ToolNameCollisionError);
    expect((failure as ToolNameCollisionError).sources).toEqual(['alpha', 'beta']);
    expect((failure as Error).message).toMatch(/"read_file".*"alpha".*"beta"/);
  });

  it('refuses a source listed twice', () => {
    const source = new FakeSource();
    expect(() => new ToolRegistry([source, source])).toThrow(/listed twice/);
  });
});
