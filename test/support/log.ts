/** A logger whose JSON lines a test reads back. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../src/log.js';

export interface LogLine {
  /** The level's name: createLogger writes `"level":"warn"`, not pino's numbers. */
  readonly level: string;
  readonly msg: string;
  readonly [k: string]: unknown;
}

export function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  return { logger: createLogger({ level: 'info', format: 'json', destination }), lines };
}

/** A logger that drops everything. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
