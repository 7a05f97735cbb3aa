/**
 * Reciprocal rank fusion: each ranking gives an item 1 / (k + rank), rank counted from 1, and the sums order the
 * items. It needs no calibration between a keyword score and a cosine similarity, which live on unrelated scales;
 * k = 60 is the constant of the method's paper (Cormack, Clarke and Büttcher, 2009).
 */
export function reciprocalRankFusion(rankings: readonly (readonly number[])[], k = 60): Map<number, number> {
  const fused = new Map<number, number>();
  for (const ranking of rankings) {
    ranking.forEach((item, index) => {
      fused.set(item, (fused.get(item) ?? 0) + 1 / (k + index + 1));
    });
  }
  return fused;
}

/** Cosine similarity of two vectors of the same length; 0 when either is all zeros. */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}
