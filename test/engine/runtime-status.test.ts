import { writeFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { interpreterStatus } from '../../src/engine/compiled-machine.ts';

/**
 * The runtime check on the xstate this process loaded (the installed one; another under
 * `npm run test:xstate-latest`, which reads the status this test writes to TROUPE_GATE_REPORT).
 */
it('the loaded xstate passes the runtime check: machines run compiled, and the status says so', () => {
  const status = interpreterStatus();
  const reportFile = process.env.TROUPE_GATE_REPORT;
  if (reportFile) writeFileSync(reportFile, JSON.stringify(status));
  expect(status).toMatchObject({ interpreter: 'compiled', problems: [] });
  expect(status.reason).toContain('canary');
  expect(status.checkMicros).toBeGreaterThan(0);
  expect(interpreterStatus()).toBe(status);
});
