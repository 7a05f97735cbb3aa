/**
 * The append-only effect log of the crash matrix: one JSON line per real execution of an effect (its start and its
 * end), per input a client sent, per approval decision, per self-kill. It lives outside the store, so it records
 * what really ran, whatever the store says afterwards.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export type EffectKind = 'model' | 'tool';

export type LogLine =
  /** An effect began (`start`) or is about to hand its result back (`end`). */
  | {
      type: 'effect';
      /** The process's number in the trial (0 for the first). */
      proc: number;
      pid: number;
      kind: EffectKind;
      phase: 'start' | 'end';
      /** The effect's identity: a model call's request hash, a tool call's id. */
      key: string;
      /** The key the runtime gave a tool call (`ctx.idempotencyKey`). */
      idempotencyKey?: string;
      session: string;
      /** The session turn the effect belongs to (from the input's tag). */
      turn: number;
      agent: string;
      route?: string;
      step?: number;
      tool?: string;
    }
  /** A client input was accepted by the session: spawn(), restore() or send() returned. */
  | { type: 'sent'; proc: number; pid: number; session: string; input: string }
  /** A person's decision was stored. */
  | {
      type: 'decided';
      proc: number;
      pid: number;
      session: string;
      callId: string;
      tool: string;
      decision: string;
    }
  /** The process is about to SIGKILL itself, at a point inside or right after an effect, or elsewhere. */
  | {
      type: 'kill';
      proc: number;
      pid: number;
      point: string;
      effect?: { kind: EffectKind; session: string; key: string };
    };

/** A line without the writer's process number and pid (the child adds them). */
export type UnplacedLine = LogLine extends infer Line
  ? Line extends LogLine
    ? Omit<Line, 'proc' | 'pid'>
    : never
  : never;

/** Appends one line; a short write to an O_APPEND file is never torn by a kill. */
export function appendLine(file: string, line: LogLine): void {
  appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** Every line of the log; a torn last line (impossible for our short writes, but cheap to tolerate) is ignored. */
export function readLog(file: string): LogLine[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').split('\n');
  const parsed: LogLine[] = [];
  lines.forEach((line, index) => {
    if (line === '') return;
    try {
      parsed.push(JSON.parse(line) as LogLine);
    } catch (error) {
      if (index !== lines.length - 1) throw error;
    }
  });
  return parsed;
}
