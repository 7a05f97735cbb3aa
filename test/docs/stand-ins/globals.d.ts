/**
 * The names the guides' sketches (blocks marked `not runnable`) take from the text around them, declared so that
 * each sketch type-checks on its own: the troupe functions a sketch uses without importing them, and stand-ins for
 * the reader's own agents, tools, models and services.
 */
import type * as troupe from 'troupe';
import type * as mcp from 'troupe/mcp';
import type * as providers from 'troupe/providers';
import type * as zod from 'zod';

declare global {
  // Imported at the top of the page, or in an earlier block.
  const z: typeof zod.z;
  const defineAgent: typeof troupe.defineAgent;
  const run: typeof troupe.run;
  const createAgentSystem: typeof troupe.createAgentSystem;
  const createSqliteStore: typeof troupe.createSqliteStore;
  const openai: typeof providers.openai;
  const anthropic: typeof providers.anthropic;
  const mcpServer: typeof mcp.mcpServer;
  const serveMcp: typeof mcp.serveMcp;

  // The reader's own.
  const model: troupe.ModelProvider;
  const tools: troupe.Tool[];
  const saveNote: troupe.Tool;
  const lookupOrder: troupe.Tool;
  const agent: troupe.Agent;
  const triage: troupe.Agent;
  const support: troupe.Agent;
  const writer: troupe.Agent;
  const extractor: troupe.Agent;
  const input: string;
  const store: troupe.SessionStore;
  const system: troupe.AgentSystem;
  const inspect: NonNullable<troupe.AgentSystemOptions['inspect']>;
  const resources: troupe.ResourceManager;
  const supervision: NonNullable<troupe.AgentSystemOptions['supervision']>;
  const signal: AbortSignal;
  const callId: string;
  const questionId: string;
  const root: string;
  const token: string;
  const secret: string;
  const myTokenStore: mcp.McpTokenStore;
  const payments: {
    refund(order: string, cents: number, options: { idempotencyKey: string }): Promise<string>;
  };
  const users: { byToken(token: string): Promise<{ subject: string; scopes?: string[] } | undefined> };
  function openBrowserAndWaitForCallback(url: URL, user: string | undefined): Promise<URL>;
  function ask(request: troupe.ApprovalRequest): troupe.ApprovalDecision;
}
