/**
 * Fuzz cases that once broke a promise, kept as plain scenarios: the property test (test/properties/fuzz.test.ts)
 * runs each of them before its random batches, so a defect found once stays found. Replay one from the command
 * line with `npx tsx bench/fuzz/fuzz.ts --replay <its JSON>`.
 */
import type { Scenario } from './scenario.ts';

export interface Regression {
  /** What went wrong, and where it was found. */
  what: string;
  scenario: Scenario;
}

export const regressions: Regression[] = [
  {
    what: "stream() never ended: a sub-agent (in the session a handoff makes) timed out while its model, which ignores aborts, never answered; its call kept its budget reservation on the caller's scope, so the caller's next call waited for the budget for ever. Reduced from the seventh scenario of fast-check seed 300038013, path 292.",
    scenario: {
      entry: 'stream',
      agents: [
        {
          name: 'gamma',
          tools: [],
          output: false,
          handoffs: [1],
          filter: 'none',
          nested: 1,
          limits: {
            maxSteps: 2,
            maxDecodeRetries: 0,
            maxToolRetries: 0,
            maxDuplicateToolCalls: 2,
            maxToolCallsPerTool: null,
            toolTimeoutMs: null,
            timeoutMs: null,
            finalAnswerOnMaxSteps: false,
            toolConcurrency: 1,
          },
          maxHandoffDepth: 4,
          maxHandoffRevisits: 0,
          script: [
            {
              kind: 'tools',
              calls: [{ id: 'fresh', name: 'nested', args: 'valid', pick: 901 }],
              deltas: 0,
              extraDeltas: false,
              delayMs: 0,
              honorAbort: false,
              streamAfterAbort: false,
              stopReason: 'natural',
              usage: 1,
              pick: 696,
            },
          ],
        },
        {
          name: 'beta',
          tools: [],
          output: false,
          handoffs: [],
          filter: 'none',
          nested: null,
          limits: {
            maxSteps: 1,
            maxDecodeRetries: 0,
            maxToolRetries: 0,
            maxDuplicateToolCalls: 2,
            maxToolCallsPerTool: null,
            toolTimeoutMs: null,
            timeoutMs: 1,
            finalAnswerOnMaxSteps: false,
            toolConcurrency: 1,
          },
          maxHandoffDepth: 0,
          maxHandoffRevisits: 1,
          script: [
            {
              kind: 'hang',
              calls: [{ id: 'fresh', name: 'fatal', args: 'valid', pick: 222 }],
              deltas: 0,
              extraDeltas: false,
              delayMs: 0,
              honorAbort: false,
              streamAfterAbort: false,
              stopReason: 'natural',
              usage: 1,
              pick: 985,
            },
          ],
        },
      ],
      inputs: ['text'],
      turns: [{ abortAfterMs: null, turnTimeoutMs: null, sendEarly: false, steps: false }],
      history: 'none',
      budgetTokens: 1890,
      approval: 'none',
      badOption: false,
      stopAfterMs: null,
      shutdownMode: 'drain',
    },
  },
];
