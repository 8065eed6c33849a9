/**
 * Endpoint security from a web config file, in the format Prometheus
 * exporters take with --web.config.file (exporter-toolkit):
 *
 *   tls_server_config: { cert_file, key_file, client_ca_file?, client_auth_type? }
 *   basic_auth_users: { <user>: <bcrypt hash> }
 *
 * Relative paths are resolved against the config file's directory.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { parse as parseYaml } from 'yaml';
import { lazyCrypto } from '../lazy-modules.js';
import { CheckQueue, type Standing } from './auth-queue.js';
import { sourceOf, type AuthThrottleReason } from './http-guard.js';

/** Go's crypto/tls client authentication policies, as exporter-toolkit names them. */
export type ClientAuthType =
  | 'NoClientCert'
  | 'RequestClientCert'
  | 'RequireAnyClientCert'
  | 'VerifyClientCertIfGiven'
  | 'RequireAndVerifyClientCert';

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
  readonly clientAuth: ClientAuthType;
}

export interface WebConfig {
  readonly tls?: TlsFiles;
  /** user → bcrypt hash; empty means no authentication. */
  readonly users: ReadonlyMap<string, string>;
  /** Overrides for the password checks (tests). */
  readonly auth?: BasicAuthOptions;
}

export class WebConfigError extends Error {}

const CLIENT_AUTH: ReadonlyMap<string, ClientAuthType> = new Map([
  ['NoClientCert', 'NoClientCert'],
  ['RequestClientCert', 'RequestClientCert'],
  ['RequireAnyClientCert', 'RequireAnyClientCert'],
  // exporter-toolkit's older name for RequireAnyClientCert.
  ['RequireClientCert', 'RequireAnyClientCert'],
  ['VerifyClientCertIfGiven', 'VerifyClientCertIfGiven'],
  ['RequireAndVerifyClientCert', 'RequireAndVerifyClientCert'],
] as const);

export function loadWebConfig(file: string): WebConfig {
  let doc: unknown;
  try {
    doc = parseYaml(fs.readFileSync(file, 'utf8')) ?? {};
  } catch (err) {
    throw new WebConfigError(`web config ${file}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new WebConfigError(`web config ${file}: expected a mapping`);
  const d = doc as Record<string, unknown>;
  const unknown = Object.keys(d).filter(
    (k) => !['tls_server_config', 'basic_auth_users', 'http_server_config'].includes(k),
  );
  if (unknown.length) throw new WebConfigError(`web config ${file}: unknown key(s) ${unknown.join(', ')}`);
  const dir = path.dirname(file);
  return {
    tls: d.tls_server_config ? readTls(d.tls_server_config, dir, file) : undefined,
    users: readUsers(d.basic_auth_users, file),
  };
}

function readTls(v: unknown, dir: string, file: string): TlsFiles {
  const t = (v ?? {}) as Record<string, unknown>;
  const read = (key: string): Buffer => {
    const p = t[key];
    if (typeof p !== 'string' || p === '')
      throw new WebConfigError(`web config ${file}: tls_server_config.${key} is required`);
    try {
      return fs.readFileSync(path.resolve(dir, p));
    } catch (err) {
      throw new WebConfigError(
        `web config ${file}: cannot read ${key} ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  };
  const name =
    typeof t.client_auth_type === 'string' && t.client_auth_type !== '' ? t.client_auth_type : 'NoClientCert';
  const clientAuth = CLIENT_AUTH.get(name);
  if (!clientAuth)
    throw new WebConfigError(
      `web config ${file}: client_auth_type "${name}" is not one of ${[...CLIENT_AUTH.keys()].join(', ')}`,
    );
  const ca = typeof t.client_ca_file === 'string' ? read('client_ca_file') : undefined;
  if (ca && clientAuth === 'NoClientCert')
    throw new WebConfigError(
      `web config ${file}: client_ca_file is set but client_auth_type is NoClientCert (set one of ${[...CLIENT_AUTH.keys()].slice(1).join(', ')})`,
    );
  if (!ca && (clientAuth === 'VerifyClientCertIfGiven' || clientAuth === 'RequireAndVerifyClientCert'))
    throw new WebConfigError(`web config ${file}: client_auth_type ${name} needs client_ca_file`);
  return { cert: read('cert_file'), key: read('key_file'), ...(ca ? { ca } : {}), clientAuth };
}

function readUsers(v: unknown, file: string): Map<string, string> {
  const users = new Map<string, string>();
  if (v === undefined || v === null) return users;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new WebConfigError(`web config ${file}: basic_auth_users must map user names to bcrypt hashes`);
  for (const [user, hash] of Object.entries(v as Record<string, unknown>)) {
    if (typeof hash !== 'string' || !/^\$2[abxy]?\$\d\d\$/.test(hash))
      throw new WebConfigError(`web config ${file}: the password of "${user}" is not a bcrypt hash`);
    users.set(user, hash);
  }
  return users;
}

/** Compares a password with a bcrypt hash; true when they match. */
export type PasswordVerifier = (password: string, hash: string) => Promise<boolean>;

export interface BasicAuthOptions {
  readonly verify?: PasswordVerifier;
  /** Failed checks one client address may make per window before it is answered 429 (default 10). */
  readonly maxFailures?: number;
  readonly failureWindowMs?: number;
  readonly now?: () => number;
  /** Told each check answered 429, and why (counted and logged by the endpoint). */
  readonly onThrottled?: (reason: AuthThrottleReason, source: string) => void;
}

export type AuthVerdict = 'ok' | 'denied' | 'limited';

/**
 * Comparisons waiting or running at most, for all endpoints together (they share the worker);
 * beyond, the least deserving are told to retry later (auth-queue.ts). Many addresses guessing at
 * once would otherwise queue minutes of bcrypt.
 */
const MAX_PENDING_CHECKS = 32;

/** Of those, at most this many from one source address per endpoint: one source cannot hold the queue. */
const MAX_CHECKS_PER_SOURCE = 2;

/** Client addresses tracked for failures (and, apart, for success) at most; beyond, the oldest are forgotten. */
const MAX_TRACKED_CLIENTS = 10_000;

/** The order in which checks get the worker: one queue, as there is one worker. */
const CHECKS = new CheckQueue<boolean>(MAX_PENDING_CHECKS, MAX_CHECKS_PER_SOURCE);

/**
 * Checks an Authorization header against the users, as exporter-toolkit does, and so that wrong
 * passwords cannot starve the agent nor keep a scraper out:
 * - bcrypt runs on a worker thread (it costs tens of ms of CPU by design), never on the event loop;
 * - a successful check is remembered by a digest of user, password and hash: a scraper every
 *   15 s pays bcrypt once;
 * - every check costs the same bcrypt work (2^cost rounds of the highest cost among the users),
 *   so that its time tells neither which names exist nor which user a name is: an unknown user is
 *   compared with a dummy hash of that cost, and a user whose hash costs less is also compared
 *   with dummy hashes of the costs between (2^c + 2^c + … + 2^(max-1) = 2^max);
 * - a client address with too many failures in a window is answered 429 without a comparison;
 * - the comparisons wait for the worker in a bounded queue where a source address that passed a
 *   check before goes first, then addresses with no failure in the window, then the others, and
 *   no source holds more than MAX_CHECKS_PER_SOURCE places (auth-queue.ts says what it protects
 *   and what it cannot). The order depends on the address's history, never on the user name.
 * Addresses are compared as sources (IPv6 by /64; http-guard.ts's sourceOf).
 */
export class BasicAuth {
  private readonly verified = new Map<string, Buffer>();
  private readonly failures = new Map<string, { count: number; resetAtMs: number }>();
  private readonly trusted = new Set<string>();
  private readonly verify: PasswordVerifier;
  private readonly maxFailures: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly maxCost: number;
  private readonly onThrottled: (reason: AuthThrottleReason, source: string) => void;

  constructor(
    private readonly users: ReadonlyMap<string, string>,
    opts: BasicAuthOptions = {},
  ) {
    this.verify = opts.verify ?? verifyOnWorker;
    this.maxFailures = opts.maxFailures ?? 10;
    this.windowMs = opts.failureWindowMs ?? 60_000;
    this.now = opts.now ?? Date.now;
    this.maxCost = Math.max(MIN_COST, ...[...users.values()].map(costOf));
    this.onThrottled = opts.onThrottled ?? (() => undefined);
  }

  get enabled(): boolean {
    return this.users.size > 0;
  }

  /** How long a limited client should wait (the failure window). */
  get retryAfterMs(): number {
    return this.windowMs;
  }

  /** `gone`: true once the client has hung up; its check is then dropped before it runs. */
  async check(header: string | undefined, client = '', gone?: () => boolean): Promise<AuthVerdict> {
    if (!this.enabled) return 'ok';
    const creds = parseBasic(header);
    if (creds === undefined) return 'denied';
    const hash = this.users.get(creds.user);
    const digest = lazyCrypto()
      .createHash('sha256')
      .update(`${creds.user}\0${creds.password}\0${hash ?? ''}`)
      .digest();
    if (this.remembered(creds.user, hash, digest)) return 'ok';
    const source = sourceOf(client);
    if (this.limited(source)) return this.throttled('failures', source);
    const outcome = await CHECKS.submit({
      owner: this,
      source,
      standing: this.standing(source),
      gone,
      // Checked again when its turn comes: the same scraper may have passed while this one waited.
      run: async () => this.remembered(creds.user, hash, digest) || this.compare(creds.password, hash),
    });
    if (!outcome.ran) return outcome.why === 'gone' ? 'denied' : this.throttled(outcome.why, source);
    if (outcome.value && hash !== undefined) {
      this.verified.set(creds.user, digest);
      remember(this.trusted, source);
      return 'ok';
    }
    this.fail(source);
    return 'denied';
  }

  /** Drops this endpoint's checks still waiting (the endpoint is closing). */
  close(): void {
    CHECKS.drop(this);
  }

  private remembered(user: string, hash: string | undefined, digest: Buffer): boolean {
    const known = this.verified.get(user);
    return hash !== undefined && known !== undefined && lazyCrypto().timingSafeEqual(known, digest);
  }

  /** The same bcrypt work whatever the user (see the class comment); true when the password matches. */
  private async compare(password: string, hash: string | undefined): Promise<boolean> {
    const target = hash ?? dummyHash(this.maxCost);
    const match = await this.verify(password, target);
    for (let cost = costOf(target); cost < this.maxCost; cost++) await this.verify(password, dummyHash(cost));
    return match && hash !== undefined;
  }

  private throttled(reason: AuthThrottleReason, source: string): 'limited' {
    this.onThrottled(reason, source);
    return 'limited';
  }

  private standing(source: string): Standing {
    if (this.trusted.has(source)) return 'trusted';
    return this.failedRecently(source) ? 'failed' : 'fresh';
  }

  private failedRecently(source: string): boolean {
    const f = this.failures.get(source);
    if (f === undefined) return false;
    if (f.resetAtMs <= this.now()) {
      this.failures.delete(source);
      return false;
    }
    return f.count > 0;
  }

  private limited(source: string): boolean {
    return this.failedRecently(source) && (this.failures.get(source)?.count ?? 0) >= this.maxFailures;
  }

  private fail(source: string): void {
    const f = this.failures.get(source);
    if (f !== undefined) {
      f.count++;
      return;
    }
    if (this.failures.size >= MAX_TRACKED_CLIENTS) this.failures.delete(this.failures.keys().next().value as string);
    this.failures.set(source, { count: 1, resetAtMs: this.now() + this.windowMs });
  }
}

/** Adds `source` to a bounded set, forgetting the oldest beyond MAX_TRACKED_CLIENTS. */
function remember(set: Set<string>, source: string): void {
  set.delete(source);
  if (set.size >= MAX_TRACKED_CLIENTS) set.delete(set.values().next().value as string);
  set.add(source);
}

/** `Basic <base64 user:password>`; the scheme is case-insensitive (RFC 9110). */
function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const MIN_COST = 4;

/** The cost (log2 of the rounds) of a bcrypt hash. */
function costOf(hash: string): number {
  return Number(/^\$2[abxy]?\$(\d\d)\$/.exec(hash)?.[1] ?? MIN_COST);
}

/** A well-formed hash of the given cost: comparing with it costs what a real one does, and never matches. */
function dummyHash(cost: number): string {
  return `$2b$${String(cost).padStart(2, '0')}$${'dummysaltdummysaltdumm'}${'x'.repeat(31)}`;
}

// ---- bcrypt off the event loop ---------------------------------------------------------------

/**
 * The worker's code, given the expression that loads bcryptjs in it: from node_modules by path
 * here, bundled in by the single executable's build (scripts/sea/build.ts), which has no
 * node_modules.
 */
export function bcryptWorkerSource(loadBcrypt: string): string {
  return `
const { parentPort } = require('node:worker_threads');
const bcrypt = ${loadBcrypt};
parentPort.on('message', ({ id, password, hash }) => {
  let ok = false;
  try { ok = bcrypt.compareSync(password, hash); } catch { ok = false; }
  parentPort.postMessage({ id, ok });
});
`;
}

/** Set by the single executable's build to the worker's code with bcryptjs inside it. */
declare const SLURM_OTEL_BUNDLED_BCRYPT_WORKER: string | undefined;

function startWorker(): Worker {
  if (typeof SLURM_OTEL_BUNDLED_BCRYPT_WORKER === 'string')
    return new Worker(SLURM_OTEL_BUNDLED_BCRYPT_WORKER, { eval: true });
  return new Worker(bcryptWorkerSource('require(require("node:worker_threads").workerData.bcrypt)'), {
    eval: true,
    workerData: { bcrypt: createRequire(import.meta.url).resolve('bcryptjs') },
  });
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (ok: boolean) => void>();

/** One shared worker, started on first use; it keeps the process alive only while a comparison is pending. */
function bcryptWorker(): Worker {
  if (worker) return worker;
  const w = startWorker();
  w.on('message', ({ id, ok }: { id: number; ok: boolean }) => {
    pending.get(id)?.(ok);
    pending.delete(id);
    if (pending.size === 0) w.unref();
  });
  // A dead worker fails the checks waiting on it (denied) and is replaced on the next one; its
  // error is not the agent's to die of.
  w.on('error', () => undefined);
  w.on('exit', () => {
    if (worker === w) worker = undefined;
    for (const done of pending.values()) done(false);
    pending.clear();
  });
  worker = w;
  return w;
}

/** Password checks waiting for the worker or running on it, for all endpoints. */
export function checksQueued(): number {
  return CHECKS.size();
}

/** Comparisons sent to the worker and not answered yet. */
export function comparisonsInFlight(): number {
  return pending.size;
}

/**
 * Ends the worker at once; the comparisons running on it and those waiting for it are denied.
 * Started again on next use.
 */
export async function stopPasswordWorker(): Promise<void> {
  CHECKS.drop();
  await worker?.terminate();
}

export const verifyOnWorker: PasswordVerifier = (password, hash) =>
  new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    const w = bcryptWorker();
    w.ref();
    w.postMessage({ id, password, hash });
  });
