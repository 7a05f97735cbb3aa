/** The reader's own services, which the Restate guide's `serve.ts` imports. */
import { createAuditLog, memoryAuditSink } from 'troupe';

export const db = { orders: (_userId: string): string[] => [] };
export const audit = createAuditLog({ sink: memoryAuditSink() });
