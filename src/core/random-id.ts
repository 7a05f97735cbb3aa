/** Random bytes for this many ids are drawn at once (as `crypto.randomUUID` does): one call to the system's source. */
const idsPerDraw = 128;
const pool = new Uint8Array(16 * idsPerDraw);
/** Where the next id's 16 bytes start; at the end, the pool is drawn again. */
let next = pool.length;

/** The character codes of the id being written, dashes in place; the hex digits are overwritten for each id. */
const codes = new Uint8Array(36).fill(0x2d);
/** Where each of the 16 bytes goes in the 36 characters (two hex digits each, dashes between the groups). */
const placeOfByte = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/** The places of the id's characters (an index of `codes`). */
// biome-ignore format: one line
type CodeIndex = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | 16 | 17 | 18 | 19 | 20 | 21 | 22 | 23 | 24 | 25 | 26 | 27 | 28 | 29 | 30 | 31 | 32 | 33 | 34 | 35;
const hexDigit = new Uint8Array([48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102]);

/**
 * A random version 4 UUID (RFC 9562), from the same source as `crypto.randomUUID`, written out as one flat string.
 * `crypto.randomUUID` joins the id from 20 pieces with `+`, which V8 keeps as a tree of 14 strings (about 0.45 KB)
 * until it is flattened; every run and session in flight holds its id, and hashes it into the set of running ids.
 * This one is made from its character codes in one step.
 */
export function randomUuid(): string {
  if (next === pool.length) {
    crypto.getRandomValues(pool);
    next = 0;
  }
  const start = next;
  next += 16;
  for (let index = 0; index < 16; index++) {
    let byte = pool[start + index] as number;
    // The version (4: random) in the high nibble of byte 6, the variant (10xx) in the top bits of byte 8.
    if (index === 6) byte = (byte & 0x0f) | 0x40;
    else if (index === 8) byte = (byte & 0x3f) | 0x80;
    const place = placeOfByte[index] as number;
    codes[place] = hexDigit[byte >> 4] as number;
    codes[place + 1] = hexDigit[byte & 0x0f] as number;
  }
  // Spelled out rather than `apply`: apply would copy the 36 codes into an argument list first.
  const c = codes as unknown as Readonly<Record<CodeIndex, number>>;
  // biome-ignore format: the 36 codes, a group of the UUID per line
  return String.fromCharCode(
    c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8],
    c[9], c[10], c[11], c[12], c[13],
    c[14], c[15], c[16], c[17], c[18],
    c[19], c[20], c[21], c[22], c[23],
    c[24], c[25], c[26], c[27], c[28], c[29], c[30], c[31], c[32], c[33], c[34], c[35],
  );
}
