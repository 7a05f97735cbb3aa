import { Session } from 'node:inspector/promises';

/** A node of V8's sampling heap profile (`HeapProfiler.stopSampling`). */
export interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

/** The bytes a sampling heap profile allocated, in all and by source site (function, file and line), largest first. */
export function allocationBySite(head: AllocationNode): { total: number; sites: [string, number][] } {
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: AllocationNode): void => {
    const frame = node.callFrame;
    const site = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\//, '')}:${frame.lineNumber + 1}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(head);
  return { total, sites: [...bySite].sort((a, b) => b[1] - a[1]) };
}

/**
 * Runs `work` under V8's sampling heap profiler (one sample per `samplingInterval` bytes on average, objects the
 * collectors freed included) and gives its result with the profile's root.
 */
export async function sampleAllocations<T>(
  samplingInterval: number,
  work: () => T | Promise<T>,
): Promise<{ result: T; head: AllocationNode }> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  try {
    const result = await work();
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
      profile: { head: AllocationNode };
    };
    return { result, head: profile.head };
  } finally {
    session.disconnect();
  }
}
