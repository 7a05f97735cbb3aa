import { writeSync } from 'node:fs';

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes a line to the standard output of a child process at once, whole, before the next statement runs (a child
 * that kills itself right after must have said what it did). The parent reads it through a pipe that may be full
 * when the machine is busy: a non-blocking pipe then refuses the write with EAGAIN, and the rest of the line is
 * written when the parent has read some of it.
 */
export function writeLine(line: string): void {
  let bytes = Buffer.from(`${line}\n`);
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(1, bytes));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}
