/**
 * Logging for both agents: pino, JSON by default, or a plain one-line format
 * for people reading a terminal. Modules receive a Logger; none creates one.
 */
import { Writable } from 'node:stream';
import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;
export type LogFormat = 'json' | 'plain';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(opts: { level: LogLevel; format: LogFormat; destination?: NodeJS.WritableStream }): Logger {
  const options = { level: opts.level, base: undefined };
  if (opts.format === 'json') return pino(options, opts.destination ?? pino.destination({ dest: 2, sync: true }));
  return pino(options, plainStream(opts.destination ?? process.stderr));
}

/** A logger that drops everything: for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

function plainStream(dest: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line) dest.write(formatPlain(line) + '\n');
      }
      done();
    },
  });
}

function formatPlain(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, ...rest } = rec;
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const when = typeof time === 'number' ? new Date(time).toISOString() : '';
  return `${when} ${LEVEL_NAMES[level as number] ?? level} ${String(msg ?? '')}${fields ? ' ' + fields : ''}`;
}
