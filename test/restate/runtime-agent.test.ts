import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/agent/define-agent.ts';
import { forTurn } from '../../src/restate/runtime-agent.ts';
import { agentTool } from '../../src/sessions/agent-tool.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';
import { tool } from '../../src/tools/tool.ts';
import type { ToolSource } from '../../src/tools/tool-source.ts';

const own = tool({ name: 'own', description: 'Own.', input: z.object({}), execute: () => 'own' });
const listed = tool({ name: 'listed', description: 'Listed.', input: z.object({}), execute: () => 'listed' });

/** A tool source (as an MCP server is) that lists `listed` once prepared. */
function source(): ToolSource {
  let ready = false;
  return {
    kind: 'tool-source',
    name: 'remote',
    get version() {
      return ready ? 1 : 0;
    },
    current: () => (ready ? [listed] : []),
    isReady: () => ready,
    async prepare() {
      ready = true;
    },
  };
}

describe('forTurn (an agent as a Restate turn runs it)', () => {
  it('moves the tool timeout onto the tools, keeps tool sources as sources and gives their tools the timeout', async () => {
    const helper = defineAgent({
      name: 'helper',
      description: 'Helps.',
      instructions: '',
      model: scriptedModel([]),
    });
    const remote = source();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([]),
      tools: [own, remote, agentTool(helper)],
      limits: { toolTimeoutMs: 1_500 },
    });
    const turn = forTurn(agent);
    expect(turn.limits.toolTimeoutMs).toBeNull();
    expect(turn.tools.sources).toHaveLength(1);
    expect(turn.tools.find('own')?.timeoutMs).toBe(1_500);
    // An agent used as a tool gets no timer (its run is bounded instead).
    expect(turn.tools.find('helper')?.timeoutMs).toBeUndefined();
    expect(turn.tools.find('listed')).toBeUndefined();
    await turn.tools.prepare({ sessionId: 's', signal: new AbortController().signal });
    expect(turn.tools.find('listed')?.timeoutMs).toBe(1_500);
    expect(turn.tools.names).toEqual(['own', 'helper', 'listed']);
    // The source itself was listed: the agent as defined sees the same tools.
    expect(agent.tools.find('listed')).toBe(listed);
  });
});
