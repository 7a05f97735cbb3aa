import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contextType,
  createAgentSystem,
  createAuditLog,
  defineAgent,
  jsonlAuditSink,
  permissions,
  tool,
  verifyAuditLog,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

interface Caller {
  role: 'admin' | 'user';
}

const search = tool({
  name: 'search',
  description: 'Searches.',
  input: z.object({}),
  execute: () => 'found',
});
const refund = tool({
  name: 'refund',
  description: 'Refunds.',
  input: z.object({}),
  execute: () => 'refunded',
});

const clerk = defineAgent({
  name: 'clerk',
  contextType: contextType<Caller>(),
  instructions: '',
  model: scriptedModel([
    {
      toolCalls: [
        { name: 'search', args: {} },
        { name: 'refund', args: {} },
      ],
    },
    { text: 'ok' },
  ]),
  tools: [search, refund],
  permissions: permissions.byRole<Caller>({ admin: ['*'], user: ['search'] }, (context) => context.role),
});

const path = join(tmpdir(), `troupe-audit-${process.pid}.jsonl`);
const audit = createAuditLog({ sink: jsonlAuditSink(path) });
const system = createAgentSystem({ audit });
const result = await system.spawn(clerk, 'Refund me', { context: { role: 'user' } }).result;
console.log(result.history.at(-2)?.content); // Error: permission denied: ... role "user" may not call "refund"
await system.shutdown(); // flushes the audit log
await audit.close();
console.log(verifyAuditLog(path)); // { ok: true, count: 1 }
rmSync(path);
