/**
 * Logging for both agents: pino, JSON by default, or a plain one-line format
 * for people reading a terminal. Modules receive a Logger; none creates one.
 *
 * Every line is redacted before it is written: the values of registered secrets
 * (tokens, as their sources produce them) and any `user:password@` in a URL are
 * replaced, wherever they appear (a message, an error echoed by a server, a field).
 */
import { Writable } from 'node:stream';
import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;
export type LogFormat = 'json' | 'plain';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(opts: {
  level: LogLevel;
  format: LogFormat;
  destination?: NodeJS.WritableStream;
}): Logger {
  const options = { level: opts.level, base: undefined };
  if (opts.format === 'json')
    return pino(options, redacting(opts.destination ?? pino.destination({ dest: 2, sync: true })));
  return pino(options, redacting(plainStream(opts.destination ?? process.stderr)));
}

/** Shorter values are not registered: redacting them would garble ordinary text. */
const MIN_SECRET_LENGTH = 8;
/** Tokens are renewed for as long as the agent runs: only the latest few are remembered. */
const MAX_SECRETS = 32;
const secrets = new Set<string>();

/**
 * Registers a secret: from now on its value, raw or as escaped inside JSON text, is replaced by
 * `<redacted>` in every log line and in every text passed through redactSecrets().
 */
export function registerSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || secrets.has(value)) return;
  if (secrets.size >= MAX_SECRETS) secrets.delete(secrets.values().next().value as string);
  secrets.add(value);
}

/** The password of a `scheme://user:password@host` URL; the user name is kept. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@"]*):[^\s/@"]*@/gi;

/** Text with every registered secret and URL password replaced. */
export function redactSecrets(text: string): string {
  let out = text.replace(URL_CREDENTIALS, '$1:<redacted>@');
  for (const s of secrets) {
    out = out.split(s).join('<redacted>');
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s) out = out.split(escaped).join('<redacted>');
  }
  return out;
}

/** A URL fit for a log line or a page: its password replaced. */
export function redactUrl(url: string): string {
  return url.replace(URL_CREDENTIALS, '$1:<redacted>@');
}

/** pino writes each line with one write(): redact it there, whatever field carries the secret. */
function redacting(dest: { write(line: string): unknown }): { write(line: string): void } {
  return { write: (line: string) => void dest.write(redactSecrets(line)) };
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

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
