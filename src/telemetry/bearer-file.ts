/**
 * The credential an agent presents on its OTLP push: a bearer token kept in a file (never a flag
 * value, which any local user can read in the process table). The file is read again whenever it
 * changes, so a token rotated by rewriting or renaming over the file is used from the next push
 * on, without a restart. The token itself is registered as a secret, so no log line can show it;
 * errors name the file, never its content.
 */
import { readFileSync, statSync, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { registerSecret } from '../log.js';

/** A token file that cannot be used: unreadable, empty, or more than one word on its first line. */
export class BearerFileError extends Error {}

/** Headers for one request, built from the file's current content. */
export type HeadersFactory = () => Promise<Record<string, string>>;

/** The token of a file's text: its first line that is not blank or a `#` comment, one word. */
export function parseBearerText(text: string): string | undefined {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#'));
  return line === undefined || /\s/.test(line) ? undefined : line;
}

/** ino catches an atomic rename-over; size and mtime catch a rewrite in place. */
function stampOf(st: Stats): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}

function tokenOf(path: string, text: string): string {
  const token = parseBearerText(text);
  if (token === undefined)
    throw new BearerFileError(`bearer token file ${path} holds no token (one word on its first non-comment line)`);
  registerSecret(token);
  return token;
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}

/**
 * Checks the file once, synchronously (at start-up, so a missing or empty file is a configuration
 * error and not a stream of failed pushes), and returns the factory the OTLP exporter calls
 * before each request.
 */
export function bearerTokenFile(named: string, extra: Readonly<Record<string, string>> = {}): HeadersFactory {
  // Re-read in libuv's thread pool, which follows the process's working directory: the file named
  // at start, wherever that goes (the node agent's fd scan reads from within fd directories).
  const path = resolve(named);
  let cached: { stamp: string; token: string };
  try {
    cached = { stamp: stampOf(statSync(path)), token: tokenOf(path, readFileSync(path, 'utf8')) };
  } catch (err) {
    if (err instanceof BearerFileError) throw err;
    throw new BearerFileError(`cannot read bearer token file ${path}: ${codeOf(err)}`);
  }
  return async () => {
    try {
      const stamp = stampOf(await stat(path));
      if (stamp !== cached.stamp) cached = { stamp, token: tokenOf(path, await readFile(path, 'utf8')) };
    } catch (err) {
      // This push fails (counted and logged by the exporter's wrapper); the next one reads again.
      if (err instanceof BearerFileError) throw err;
      throw new BearerFileError(`cannot read bearer token file ${path}: ${codeOf(err)}`);
    }
    return { ...extra, authorization: `Bearer ${cached.token}` };
  };
}
