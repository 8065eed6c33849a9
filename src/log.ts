/**
 * Logging for both agents: pino, JSON by default (level names and ISO times), or a plain one-line
 * format for people reading a terminal. Modules receive a Logger; none creates one.
 *
 * Every line is redacted before it is written: the values of registered secrets
 * (tokens, as their sources produce them) and any `user:password@` in a URL are
 * replaced, wherever they appear (a message, an error echoed by a server, a field).
 */
import { Writable } from 'node:stream';
import { pino, type Logger as PinoLogger, type LoggerOptions } from 'pino';

export type Logger = PinoLogger;
export type LogFormat = 'json' | 'plain';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(opts: {
  level: LogLevel;
  format: LogFormat;
  destination?: NodeJS.WritableStream;
}): Logger {
  const options: LoggerOptions = {
    level: opts.level,
    base: undefined,
    // A line a person or a log pipeline reads without pino's tables: "level":"warn" and an ISO
    // time, not "level":40 and milliseconds since 1970.
    formatters: { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
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

/**
 * pino writes each line with one write(): redact it there, whatever field carries the secret, and
 * escape there what JSON leaves raw but a terminal acts on.
 */
function redacting(dest: { write(line: string): unknown }): { write(line: string): void } {
  return { write: (line: string) => void dest.write(escapeRawInJson(redactSecrets(line))) };
}

/**
 * Characters a terminal or a line-based reader acts on, in text any user may choose (a process's
 * name, a file name, a server's answer): the C0 controls (newline, carriage return, the ESC that
 * starts colour and cursor sequences), DEL, the C1 controls (CSI among them), the Unicode line and
 * paragraph separators and the bidirectional overrides and isolates, which reorder what is shown.
 * Written raw, a process named "x\n<time> ERROR ..." would add a line of its own to the log.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** Those of them JSON text may hold raw (pino escapes the C0 controls itself). */
const RAW_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex4 = (ch: string): string => (ch.codePointAt(0) as number).toString(16).padStart(4, '0');

/** A JSON line with the characters above written as \u escapes: the same JSON value, nothing raw. */
function escapeRawInJson(line: string): string {
  return line.replace(RAW_IN_JSON, (ch) => `\\u${hex4(ch)}`);
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Text for a plain line: each unsafe character as an escape (`\n`, `\x1b`, `\u2028`), a backslash doubled. */
function escapeControls(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(UNSAFE, (ch) => {
    const code = ch.codePointAt(0) as number;
    return SHORT_ESCAPES[ch] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${hex4(ch)}`);
  });
}

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
    return escapeControls(line);
  }
  const { time, level, msg, ...rest } = rec;
  // Every part that is not the time or the level is escaped: the message and each field's name
  // and value (JSON text of an object may still hold DEL, C1 controls and the Unicode ones raw).
  const fields = Object.entries(rest)
    .map(([k, v]) => `${escapeControls(k)}=${typeof v === 'string' ? escapeControls(v) : plainJson(v)}`)
    .join(' ');
  // Both are written by createLogger's own options: an ISO time and a level name.
  const when = typeof time === 'string' ? escapeControls(time) : '';
  const name = escapeControls(String(level)).toUpperCase();
  return `${when} ${name} ${escapeControls(String(msg ?? ''))}${fields ? ' ' + fields : ''}`;
}

/** A non-string value as JSON text, with what JSON leaves raw escaped. */
function plainJson(v: unknown): string {
  return String(JSON.stringify(v)).replace(UNSAFE, (ch) => `\\u${hex4(ch)}`);
}
