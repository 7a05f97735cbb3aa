import { ConfigError, DuplicateToolError, UnknownToolError } from '../core/errors.ts';
import type { ToolSpec } from '../core/model.ts';
import { reactInvalidReplyTool } from '../core/model.ts';
import type { Tool } from './tool.ts';
import { ToolNameCollisionError } from './tool-name-collision-error.ts';
import { isToolSource, type ToolSource, type ToolSourceScope } from './tool-source.ts';

/** One listing of the sources' tools merged with the agent's own. */
interface SourcedView {
  versions: readonly number[];
  tools: Map<string, Tool>;
  specs: ToolSpec[];
  names: readonly string[];
  /** The first name two tools share, which fails the run when it is prepared. */
  collision: ToolNameCollisionError | undefined;
}

/**
 * An agent's tools by name: duplicate names are refused when it is built, unknown names when looked up. Tools of
 * tool sources (MCP servers) join when the sources list them; a source's tool whose name an earlier tool already
 * has fails the run when it is prepared (a {@link ToolNameCollisionError}), as the model could not tell them apart.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  readonly #specs: ToolSpec[] = [];
  readonly #sources: readonly ToolSource[];
  #names: readonly string[] | undefined;
  #view: SourcedView | undefined;

  constructor(tools: readonly (Tool | ToolSource)[]) {
    const sources: ToolSource[] = [];
    for (const candidate of tools) {
      if (isToolSource(candidate)) {
        if (sources.includes(candidate))
          throw new ConfigError(`Tool source "${candidate.name}" is listed twice.`);
        sources.push(candidate);
        continue;
      }
      if (candidate?.kind !== 'tool') {
        throw new ConfigError(
          'Every tool must be created with tool({ name, description, input, execute }) or be a tool source such as mcpServer(...).',
        );
      }
      if (this.#tools.has(candidate.name)) throw new DuplicateToolError(candidate.name);
      if (candidate.name === reactInvalidReplyTool)
        throw new ConfigError(
          `The tool name "${reactInvalidReplyTool}" is reserved for malformed ReAct replies.`,
        );
      this.#tools.set(candidate.name, candidate);
      this.#specs.push({
        name: candidate.name,
        description: candidate.description,
        parameters: candidate.parameters,
      });
    }
    this.#sources = Object.freeze(sources);
  }

  get size(): number {
    return this.names.length;
  }

  /** The tool sources (MCP servers) among the agent's tools. */
  get sources(): readonly ToolSource[] {
    return this.#sources;
  }

  /**
   * The tool names, in order: one frozen array while the tools stay the same (every run's context refers to it).
   * A source not listed yet stands as `source:<name>`, which no tool can be called, so an agent whose only tools
   * come from a source still counts as an agent with tools.
   */
  get names(): readonly string[] {
    if (this.#sources.length > 0) return this.#sourced().names;
    this.#names ??= Object.freeze([...this.#tools.keys()]);
    return this.#names;
  }

  has(name: string): boolean {
    return this.find(name) !== undefined;
  }

  /** The tool, or undefined; the loop turns an unknown name into an error result for the model. */
  find(name: string): Tool | undefined {
    if (this.#sources.length > 0) return this.#sourced().tools.get(name);
    return this.#tools.get(name);
  }

  get(name: string): Tool {
    const found = this.find(name);
    if (!found) throw new UnknownToolError(name, this.names);
    return found;
  }

  /** Specs to send to the model, leaving out the disabled (degraded) tools. */
  specs(disabled: readonly string[] = []): ToolSpec[] {
    const specs = this.#sources.length > 0 ? this.#sourced().specs : this.#specs;
    if (disabled.length === 0) return specs;
    return specs.filter((spec) => !disabled.includes(spec.name));
  }

  /**
   * Brings every source's list up to date for the scope; resolves at once (no promise) when all are. Rejects with
   * the first source's failure after every source has had its try, or with a {@link ToolNameCollisionError} when
   * two of the tools listed share a name.
   */
  prepare(scope: ToolSourceScope): Promise<void> | undefined {
    if (this.#sources.length === 0) return undefined;
    const pending: Promise<void>[] = [];
    for (const source of this.#sources) if (!source.isReady(scope)) pending.push(source.prepare(scope));
    if (pending.length === 0) {
      const collision = this.#sourced().collision;
      return collision === undefined ? undefined : Promise.reject(collision);
    }
    return Promise.allSettled(pending).then((outcomes) => {
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
      const collision = this.#sourced().collision;
      if (collision !== undefined) throw collision;
    });
  }

  #sourced(): SourcedView {
    const view = this.#view;
    if (view && this.#sources.every((source, index) => source.version === view.versions[index])) return view;
    const tools = new Map(this.#tools);
    const specs = [...this.#specs];
    const names = [...this.#tools.keys()];
    const versions: number[] = [];
    // Which source each name came from (absent: the agent's own), to name both when two tools share one.
    const origins = new Map<string, string>();
    let collision: ToolNameCollisionError | undefined;
    for (const source of this.#sources) {
      versions.push(source.version);
      const listed = source.current();
      if (listed.length === 0 && source.version === 0) names.push(`source:${source.name}`);
      for (const candidate of listed) {
        if (candidate.name === reactInvalidReplyTool) continue;
        if (tools.has(candidate.name)) {
          collision ??= new ToolNameCollisionError(candidate.name, origins.get(candidate.name), source.name);
          continue;
        }
        tools.set(candidate.name, candidate);
        origins.set(candidate.name, source.name);
        specs.push({
          name: candidate.name,
          description: candidate.description,
          parameters: candidate.parameters,
        });
        names.push(candidate.name);
      }
    }
    this.#view = { versions, tools, specs, names: Object.freeze(names), collision };
    return this.#view;
  }
}
