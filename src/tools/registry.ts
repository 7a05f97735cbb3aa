import { ConfigError, DuplicateToolError, UnknownToolError } from '../core/errors.ts';
import type { ToolSpec } from '../core/model.ts';
import { reactInvalidReplyTool } from '../core/model.ts';
import type { Tool } from './tool.ts';

/** An agent's tools by name: duplicate names are refused when it is built, unknown names when looked up. */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  readonly #specs: ToolSpec[] = [];
  #names: readonly string[] | undefined;

  constructor(tools: readonly Tool[]) {
    for (const candidate of tools) {
      if (candidate?.kind !== 'tool') {
        throw new ConfigError('Every tool must be created with tool({ name, description, input, execute }).');
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
  }

  get size(): number {
    return this.#tools.size;
  }

  /** The tool names, in order. One frozen array (a registry never changes): every run's context refers to it. */
  get names(): readonly string[] {
    this.#names ??= Object.freeze([...this.#tools.keys()]);
    return this.#names;
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** The tool, or undefined; the loop turns an unknown name into an error result for the model. */
  find(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  get(name: string): Tool {
    const found = this.#tools.get(name);
    if (!found) throw new UnknownToolError(name, this.names);
    return found;
  }

  /** Specs to send to the model, leaving out the disabled (degraded) tools. */
  specs(disabled: readonly string[] = []): ToolSpec[] {
    if (disabled.length === 0) return this.#specs;
    return this.#specs.filter((spec) => !disabled.includes(spec.name));
  }
}
