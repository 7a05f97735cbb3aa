import { z } from 'zod';
import { ConfigError } from '../core/errors.ts';
import { type AgentLimits, type ResolvedLimits, resolveLimits } from '../core/limits.ts';
import { isModelProvider, type ModelProvider, type ModelSettings, type OutputSpec } from '../core/model.ts';
import { ToolRegistry } from '../tools/registry.ts';
import { type Tool, toJsonSchema } from '../tools/tool.ts';

export interface AgentOptions<TSchema extends z.ZodType | undefined = undefined> {
  /** Shown on every event the agent produces. 1-64 letters, digits, `_`, `-` or `.`. */
  name: string;
  /** The system prompt. */
  instructions: string;
  model: ModelProvider;
  tools?: readonly Tool[];
  /** A zod schema for a structured final answer (L6); the result's `output` is typed from it. */
  output?: TSchema;
  limits?: AgentLimits;
  /** Default model settings for every call of this agent. */
  settings?: ModelSettings;
}

/** A defined agent: checked once, immutable, reusable across any number of runs. */
export interface Agent<TOutput = undefined> {
  readonly kind: 'agent';
  readonly name: string;
  readonly instructions: string;
  readonly model: ModelProvider;
  readonly tools: ToolRegistry;
  readonly outputSchema: z.ZodType<TOutput> | undefined;
  /** The output schema as JSON Schema, sent in the final-output phase. */
  readonly outputSpec: OutputSpec | undefined;
  readonly limits: ResolvedLimits;
  readonly settings: ModelSettings;
}

export type OutputOf<TSchema> = TSchema extends z.ZodType ? z.output<TSchema> : undefined;

const agentNamePattern = /^[a-zA-Z0-9_.-]{1,64}$/;

/**
 * Defines an agent. Everything is checked here, so a bad definition fails at start-up with a ConfigError (or a
 * DuplicateToolError) rather than in the middle of a run.
 */
export function defineAgent<TSchema extends z.ZodType | undefined = undefined>(
  options: AgentOptions<TSchema>,
): Agent<OutputOf<TSchema>> {
  if (typeof options !== 'object' || options === null)
    throw new ConfigError('defineAgent(): options must be an object.');
  const where = `defineAgent(${JSON.stringify(options.name)})`;
  if (typeof options.name !== 'string' || !agentNamePattern.test(options.name)) {
    throw new ConfigError(`${where}: name must be 1-64 letters, digits, "_", "-" or ".".`);
  }
  if (typeof options.instructions !== 'string')
    throw new ConfigError(`${where}: instructions must be a string.`);
  if (!isModelProvider(options.model)) {
    throw new ConfigError(
      `${where}: model must be a ModelProvider (for example scriptedModel([...]) from 'troupe/testing').`,
    );
  }
  if (options.tools !== undefined && !Array.isArray(options.tools)) {
    throw new ConfigError(`${where}: tools must be an array of tool(...) definitions.`);
  }
  if (options.output !== undefined && !(options.output instanceof z.ZodType)) {
    throw new ConfigError(`${where}: output must be a zod schema.`);
  }
  const outputSchema = options.output as z.ZodType<OutputOf<TSchema>> | undefined;
  return Object.freeze({
    kind: 'agent',
    name: options.name,
    instructions: options.instructions,
    model: options.model,
    tools: new ToolRegistry(options.tools ?? []),
    outputSchema,
    outputSpec: outputSchema
      ? { name: `${options.name.replace(/\./g, '_')}_output`, schema: toJsonSchema(outputSchema, where) }
      : undefined,
    limits: resolveLimits(options.limits, where),
    settings: { ...options.settings },
  });
}
