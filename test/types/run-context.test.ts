import {
  type Agent,
  agentTool,
  contextType,
  createAgentSystem,
  defineAgent,
  permissions,
  type RunContextInfo,
  run,
  stream,
  type Tool,
  type ToolContext,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

/**
 * The run context is typed end to end: an agent's context type comes from `contextType<T>()` (or from its tools),
 * tools and instruction functions see it typed, and every entry point demands a context of that type. These
 * assertions are checked by `tsc` (npm test type-checks test/); the calls are never awaited.
 */

interface AppContext {
  userId: string;
  db: { find(id: string): string };
}
interface OtherContext {
  tenant: number;
}

const model = scriptedModel([]);
/** Type-checks `check` without running it: these runs and sessions exist for the compiler only. */
const compileOnly = (_check: () => unknown): void => undefined;
const app: AppContext = { userId: 'u1', db: { find: (id) => id } };

const lookup = tool({
  name: 'lookup',
  description: 'Finds a record.',
  input: z.object({ id: z.string() }),
  contextType: contextType<AppContext>(),
  execute: ({ id }, ctx) => {
    expectTypeOf(ctx).toEqualTypeOf<ToolContext<AppContext>>();
    expectTypeOf(ctx.context).toEqualTypeOf<AppContext>();
    return ctx.context.db.find(id);
  },
});

const billingTool = tool({
  name: 'bill',
  description: 'Bills a tenant.',
  input: z.object({}),
  contextType: contextType<OtherContext>(),
  execute: (_args, ctx) => ctx.context.tenant,
});

const plainTool = tool({
  name: 'clock',
  description: 'The time.',
  input: z.object({}),
  execute: (_args, ctx) => {
    expectTypeOf(ctx.context).toBeUnknown();
    return 'noon';
  },
});

describe('the run context type', () => {
  it('comes from contextType() and types the instruction function', () => {
    const agent = defineAgent({
      name: 'support',
      contextType: contextType<AppContext>(),
      instructions: ({ context, sessionId }) => {
        expectTypeOf(context).toEqualTypeOf<AppContext>();
        expectTypeOf(sessionId).toBeString();
        return `You help user ${context.userId}.`;
      },
      model,
      tools: [lookup, plainTool],
    });
    expectTypeOf(agent).toEqualTypeOf<Agent<undefined, AppContext>>();
  });

  it('comes from an annotated instruction function', () => {
    const agent = defineAgent({
      name: 'support',
      instructions: ({ context }: RunContextInfo<AppContext>) => `User ${context.userId}.`,
      model,
      tools: [lookup],
    });
    expectTypeOf(agent).toEqualTypeOf<Agent<undefined, AppContext>>();
  });

  it('is none for an agent that declares none, and such an agent takes no tool that needs one', () => {
    const plain = defineAgent({ name: 'plain', instructions: '', model, tools: [plainTool] });
    expectTypeOf(plain).toEqualTypeOf<Agent<undefined>>();
    // @ts-expect-error lookup needs an AppContext: declare contextType<AppContext>() on the agent
    defineAgent({ name: 'support', instructions: '', model, tools: [plainTool, lookup] });
  });

  it('refuses a tool that needs another context', () => {
    defineAgent({
      name: 'support',
      contextType: contextType<AppContext>(),
      instructions: '',
      model,
      // @ts-expect-error the tool needs an OtherContext, the agent gives an AppContext
      tools: [lookup, billingTool],
    });
  });

  it('is required, and checked, by run() and stream()', () => {
    compileOnly(() => {
      const agent = defineAgent({
        name: 'a',
        contextType: contextType<AppContext>(),
        instructions: '',
        model,
      });
      void run(agent, 'hi', { context: app });
      void stream(agent, 'hi', { context: app, sessionId: 's' });
      // @ts-expect-error the agent needs a context
      void run(agent, 'hi');
      // @ts-expect-error the agent needs a context
      void run(agent, 'hi', { sessionId: 's' });
      // @ts-expect-error a context of another type
      void run(agent, 'hi', { context: { tenant: 1 } });
      // @ts-expect-error a context of another type
      void stream(agent, 'hi', { context: { userId: 7, db: app.db } });
    });
  });

  it('is optional for an agent that declares none', () => {
    compileOnly(() => {
      const plain = defineAgent({ name: 'plain', instructions: 'Be brief.', model });
      void run(plain, 'hi');
      void run(plain, 'hi', { context: { anything: true } });
    });
  });

  it('is required and checked by spawn(), restore() and session.send()', () => {
    compileOnly(async () => {
      const agent = defineAgent({
        name: 'a',
        contextType: contextType<AppContext>(),
        instructions: '',
        model,
      });
      const system = createAgentSystem();
      const session = system.spawn(agent, 'hi', { context: app });
      void session.send('more', { context: { ...app, userId: 'u2' } });
      void session.send('more');
      // @ts-expect-error a context of another type
      void session.send('more', { context: { tenant: 1 } });
      // @ts-expect-error the agent needs a context
      system.spawn(agent, 'hi');
      // @ts-expect-error a context of another type
      system.spawn(agent, 'hi', { context: { tenant: 2 } });
      void system.restore('id', agent, { context: app });
      // @ts-expect-error a restored session needs the context again
      void system.restore('id', agent);
      void system.recover({ contextFor: ({ sessionId: id }) => ({ ...app, userId: id }) });
      await system.shutdown();
    });
  });

  it('types the permission policy by the agent context', () => {
    defineAgent({
      name: 'guarded',
      contextType: contextType<AppContext>(),
      instructions: '',
      model,
      tools: [lookup],
      permissions: (call, info) => {
        expectTypeOf(info.context).toEqualTypeOf<AppContext>();
        expectTypeOf(call.tool).toBeString();
        return info.context.userId === 'root' ? 'allow' : { decision: 'ask', reason: 'not root' };
      },
    });
    defineAgent({
      name: 'byRole',
      contextType: contextType<AppContext>(),
      instructions: '',
      model,
      permissions: permissions.byRole({ root: ['*'] }, (context) => context.userId),
    });
    defineAgent({
      name: 'wrong',
      contextType: contextType<AppContext>(),
      instructions: '',
      model,
      // @ts-expect-error the policy reads a context the agent does not give
      permissions: permissions.byRole<OtherContext>({ root: ['*'] }, (context) => String(context.tenant)),
    });
  });

  it('carries through agents used as tools, and tools stay assignable to tool lists', () => {
    const researcher = defineAgent({
      name: 'researcher',
      description: 'Researches.',
      contextType: contextType<AppContext>(),
      instructions: '',
      model,
      tools: [lookup],
    });
    const asTool = agentTool(researcher);
    expectTypeOf(asTool).toExtend<Tool<{ input: string }, unknown, AppContext>>();
    const lead = defineAgent({
      name: 'lead',
      contextType: contextType<AppContext & { role: string }>(),
      instructions: '',
      model,
      tools: [asTool],
    });
    expectTypeOf(lead).toEqualTypeOf<Agent<undefined, AppContext & { role: string }>>();
    // @ts-expect-error the researcher needs an AppContext
    defineAgent({ name: 'lead', instructions: '', model, tools: [asTool] });
    const tools: Tool[] = [lookup, billingTool, plainTool, asTool];
    const agents: Agent<unknown>[] = [researcher, lead];
    expectTypeOf(tools).toBeArray();
    expectTypeOf(agents).toBeArray();
    expectTypeOf<RunContextInfo<AppContext>['context']>().toEqualTypeOf<AppContext>();
  });
});
