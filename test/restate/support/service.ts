import { createAuditLog } from '../../../src/audit/audit-log.ts';
import { jsonlAuditSink } from '../../../src/audit/jsonl-audit-sink.ts';
import { serveAgents } from '../../../src/restate/serve.ts';
import { deskAgents, fileProbe } from './desk-agents.ts';

/**
 * The Troupe endpoint the Restate tests run as a child process: the desk agents, an effects log shared with the
 * test, a crash point (CRASH_AT) at which the process SIGKILLs itself, and optionally an audit log (AUDIT_LOG, JSONL).
 */
const port = Number(process.env.PORT);
const log = process.env.EFFECTS_LOG;
if (!Number.isInteger(port) || port <= 0 || !log) throw new Error('PORT and EFFECTS_LOG must be set.');
const agents = deskAgents(fileProbe(log, Number(process.env.CRASH_AT ?? '0')));
const served = await serveAgents([agents.triage, agents.clerk], {
  port,
  // A killed endpoint comes back within a second: retry quickly, and never give up during a test.
  retryPolicy: { initialInterval: 20, maxInterval: 250, exponentiationFactor: 1.5, maxAttempts: 10_000 },
  ...(process.env.AUDIT_LOG
    ? { audit: createAuditLog({ sink: jsonlAuditSink(process.env.AUDIT_LOG) }) }
    : {}),
});
process.stdout.write(`listening ${served.port}\n`);
