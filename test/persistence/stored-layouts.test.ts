import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { agentTool, createAgentSystem, createSqliteStore, defineAgent, tool, validateHistory } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { storeLayoutVersion } from '../../src/persistence/store.ts';
import { layoutMigrations } from '../../src/persistence/stored-format/layout-migrations.ts';
import { until } from '../support/until.ts';

/**
 * The corpus: stores written by the code of every layout (fixtures/layouts/generate.ts, run at that layout's
 * commit). Each is opened by this code (an earlier layout migrated in place) and its interrupted sessions resumed to
 * the end.
 */
const corpus = [2, 3, 4, 5, 6, 7, 8] as const;

const directory = mkdtempSync(join(tmpdir(), 'troupe-layouts-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function copyOf(layout: number): string {
  const path = join(directory, `layout-${layout}.db`);
  copyFileSync(new URL(`./fixtures/layouts/layout-${layout}.db`, import.meta.url), path);
  return path;
}

function layoutOf(path: string): unknown {
  const db = new DatabaseSync(path);
  try {
    return db.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value;
  } finally {
    db.close();
  }
}

/** The agents of the corpus's sessions, as a new version of the program defines them (new scripted answers). */
function agents() {
  const slowRuns: number[] = [];
  const pay = tool({
    name: 'pay',
    description: 'Pays an amount',
    input: z.object({ amount: z.number() }),
    needsApproval: true,
    execute: ({ amount }) => `paid ${amount}`,
  });
  const lookup = tool({
    name: 'lookup',
    description: 'Looks up',
    input: z.object({ q: z.string() }),
    execute: ({ q }) => `found ${q}`,
  });
  const slow = tool({
    name: 'slow',
    description: 'Finishes now',
    input: z.object({ n: z.number() }),
    execute: ({ n }) => {
      slowRuns.push(n);
      return `slow ${n} done`;
    },
  });
  const researcherModel = scriptedModel([{ text: 'research done' }]);
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Researches',
    instructions: '',
    model: researcherModel,
    tools: [lookup, slow],
  });
  const leadModel = scriptedModel([{ text: 'lead done' }, { text: 'summary done' }]);
  const lead = defineAgent({
    name: 'lead',
    instructions: '',
    model: leadModel,
    tools: [agentTool(researcher)],
  });
  const clerkModel = scriptedModel([{ text: 'payment made' }]);
  const clerk = defineAgent({ name: 'clerk', instructions: '', model: clerkModel, tools: [pay] });
  const chat = defineAgent({
    name: 'chat',
    instructions: '',
    model: scriptedModel([{ text: 'hello again' }]),
  });
  return { all: [lead, researcher, clerk, chat], chat, slowRuns, researcherModel, leadModel, clerkModel };
}

describe('stored sessions of every layout', () => {
  it('the migration table runs from the oldest corpus layout up to the current one, one step per layout', () => {
    expect(layoutMigrations.map((step) => [step.from, step.to])).toEqual(
      Array.from({ length: storeLayoutVersion - corpus[0] }, (_, index) => [
        corpus[0] + index,
        corpus[0] + index + 1,
      ]),
    );
    // The layout before the current one is in the corpus (a change of layout adds its file before it changes it).
    expect(corpus.at(-1)).toBeGreaterThanOrEqual(storeLayoutVersion - 1);
    expect(corpus.at(-1)).toBeLessThanOrEqual(storeLayoutVersion);
  });

  for (const layout of corpus) {
    it(`layout ${layout}: opened, migrated (when older), and resumed to completion (approval, nested run, queued turn, idle)`, async () => {
      const path = copyOf(layout);
      expect(layoutOf(path)).toBe(layout);
      const store = createSqliteStore(path);
      expect(layoutOf(path)).toBe(storeLayoutVersion);
      const program = agents();
      const system = createAgentSystem({ store, agents: program.all });
      expect((await system.interrupted()).map(({ sessionId, status }) => [sessionId, status]).sort()).toEqual(
        [
          ['approval', 'awaiting'],
          ['nested', 'running'],
        ],
      );
      const idleEvents = await store.readEvents('idle', -1);
      expect(idleEvents.map((event) => event.type)).toContain('run_end');

      await system.approve('approval', 'pay_1');
      const { sessions, failures } = await system.recover();
      expect(failures).toEqual([]);
      const byId = new Map(sessions.map((session) => [session.sessionId, session]));

      const paid = await byId.get('approval')?.result;
      expect(paid).toMatchObject({ status: 'completed', text: 'payment made' });
      validateHistory(paid?.history ?? []);
      expect(paid?.history.find((message) => message.role === 'tool')?.content).toContain('paid 5');

      // The nested run resumes inside the researcher: the finished lookup is not run again, the slow call is.
      const nested = await byId.get('nested')?.result;
      expect(nested).toMatchObject({ status: 'completed', text: 'lead done' });
      expect(program.slowRuns).toEqual([1]);
      expect(program.researcherModel.calls).toBe(1);
      // Then the message queued behind the interrupted turn runs.
      await until(() => program.leadModel.calls === 2 && store.load('nested')?.session.status === 'idle');
      const finished = store.load('nested');
      expect(finished?.session.turns).toBe(2);
      expect(finished?.session.transcript.at(-1)).toMatchObject({
        role: 'assistant',
        content: 'summary done',
      });
      validateHistory(finished?.session.transcript ?? []);

      const idle = await system.restore('idle', program.chat, { input: 'hello once more' });
      expect(await idle.result).toMatchObject({ status: 'completed', text: 'hello again' });
      expect((await idle.result).history.map((message) => message.content)).toEqual([
        'hello',
        'hello back',
        'hello once more',
        'hello again',
      ]);
      expect(await system.interrupted()).toEqual([]);
      await system.shutdown();
      store.close();
    });
  }
});
