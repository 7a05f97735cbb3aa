/** The reader's own agents, which the Restate guide's `serve.ts` imports. */
import { defineAgent } from 'troupe';
import { scriptedModel } from 'troupe/testing';

const model = scriptedModel([{ text: 'ok' }], { loop: true });
export const triage = defineAgent({ name: 'triage', instructions: 'Route the user.', model });
export const clerk = defineAgent({ name: 'clerk', instructions: 'Answer.', model });
