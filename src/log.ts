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

/**
 * The userinfo of a `scheme://user:password@host` URL in free text: the password is replaced, the
 * user name kept; a bare `scheme://KEY@host` (a key as the user name) is replaced whole. A password
 * with a quote or a space cannot be bounded in free text: redactUrl() bounds it in a URL, and the
 * credentials of configured URLs are registered as secrets (registerUrlSecrets).
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)(?:([^\s:/@"]*):)?[^\s/@"]*@/gi;

const redactCredentials = (text: string): string =>
  text.replace(URL_CREDENTIALS, (_m, scheme: string, user: string | undefined) =>
    user === undefined ? `${scheme}<redacted>@` : `${scheme}${user}:<redacted>@`,
  );

/** Registers the password, or the bare user name (a key), of a URL's userinfo as secrets, raw and decoded. */
export function registerUrlSecrets(url: string): void {
  const info = userinfo(url);
  if (info === undefined) return;
  const colon = info.indexOf(':');
  const secret = colon < 0 ? info : info.slice(colon + 1);
  registerSecret(secret);
  try {
    registerSecret(decodeURIComponent(secret));
  } catch {
    // Not percent-encoded: the raw form is registered.
  }
}

/** `scheme://`, then the userinfo up to the URL's last `@` (a password may hold any character). */
function userinfo(url: string): string | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  if (!scheme) return undefined;
  const at = url.lastIndexOf('@');
  return at < scheme[0].length ? undefined : url.slice(scheme[0].length, at);
}

/** Text with every registered secret and URL password replaced. */
export function redactSecrets(text: string): string {
  let out = redactCredentials(text);
  for (const s of secrets) {
    out = out.split(s).join('<redacted>');
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s) out = out.split(escaped).join('<redacted>');
  }
  return out;
}

/**
 * A run that may be a token (a JWT, a hex or base64url key): 16 or more of [A-Za-z0-9._~+=-] with a
 * letter and a digit. Error codes (ESLURM_REST_INVALID_QUERY) and words have no digit.
 */
const TOKEN_LIKE = /[A-Za-z0-9._~+=-]{16,}/g;

/** Text with registered secrets and anything token-like replaced: for text a server sent back. */
export function redactTokenLike(text: string): string {
  return redactSecrets(text).replace(TOKEN_LIKE, (run) =>
    /[0-9]/.test(run) && /[A-Za-z]/.test(run) ? '<redacted>' : run,
  );
}

/** A URL fit for a log line or a page: its password (or a bare key as user name) replaced, whatever it holds. */
export function redactUrl(url: string): string {
  const info = userinfo(url);
  if (info === undefined) return url;
  const colon = info.indexOf(':');
  const scheme = url.slice(0, url.indexOf('://') + 3);
  const kept = colon < 0 ? '<redacted>' : `${info.slice(0, colon)}:<redacted>`;
  return `${scheme}${kept}${url.slice(scheme.length + info.length)}`;
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
