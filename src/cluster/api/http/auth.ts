/**
 * Credentials for slurmrestd (auth/jwt): where the token comes from and when it is renewed.
 *
 * Every source answers `headers()` with what to send (`X-SLURM-USER-TOKEN` and, when the user is
 * known, `X-SLURM-USER-NAME`: Slurm 22.05 answers 401 to a token without it, later releases take
 * the user from the token's `sun` claim, so sending both is right everywhere). `invalidate()` is
 * called by the client when slurmrestd rejects a token; the next `headers()` then re-reads,
 * re-signs or re-runs instead of sending the same rejected token again.
 *
 * Secrets (tokens, signing keys) never appear in describe(), in error messages or in logs: text
 * from outside (scontrol's stderr, a Kubernetes error body) goes through redact() first.
 */
import { readFile, stat } from 'node:fs/promises';
import { decodeJwt, SignJWT } from 'jose';
import { ChildRunner, type RunError } from '../../../child-runner.js';
import { registerSecret } from '../../../log.js';
import { AuthError, redact } from '../../http/failure.js';

export const TOKEN_HEADER = 'X-SLURM-USER-TOKEN';
export const USER_HEADER = 'X-SLURM-USER-NAME';
export const DEFAULT_TOKEN_LIFETIME_SEC = 30 * 60;
export const DEFAULT_SCONTROL_TIMEOUT_MS = 15_000;
/** Renew when less than this share of the lifetime is left ... */
export const RENEW_FRACTION = 0.2;
/** ... or less than this many seconds, whichever is larger. */
export const RENEW_MIN_SEC = 30;

export interface TokenSource {
  /** Headers for the next request. Rejects with AuthError when no credential can be produced. */
  headers(): Promise<Record<string, string>>;
  /** The last credential was refused: produce a fresh one next time. */
  invalidate(): void;
  /** One line for logs; never contains a secret. */
  describe(): string;
  /** Ends what a renewal has in flight (a running scontrol); the source is not used afterwards. */
  close?(): void;
}

/** Every source's token passes here: registering it keeps it out of every log line, whoever echoes it. */
export function authHeaders(token: string, user: string | undefined): Record<string, string> {
  registerSecret(token);
  return user === undefined || user === '' ? { [TOKEN_HEADER]: token } : { [TOKEN_HEADER]: token, [USER_HEADER]: user };
}

/** Claims read without verification (we hold the token, we do not judge it). */
export interface JwtClaims {
  readonly user?: string;
  readonly iat?: number;
  readonly exp?: number;
}

export function peekJwt(token: string): JwtClaims {
  try {
    const c = decodeJwt(token);
    return {
      ...(typeof c['sun'] === 'string' && c['sun'] !== '' ? { user: c['sun'] } : {}),
      ...(typeof c.iat === 'number' ? { iat: c.iat } : {}),
      ...(typeof c.exp === 'number' ? { exp: c.exp } : {}),
    };
  } catch {
    return {};
  }
}

/** True when a token issued at `iat` and expiring at `exp` should be replaced at `now` (seconds). */
export function needsRenewal(now: number, iat: number, exp: number): boolean {
  const margin = Math.max(RENEW_FRACTION * Math.max(0, exp - iat), RENEW_MIN_SEC);
  return exp - now < margin;
}

// ---------------------------------------------------------------------------------------------
// none / static / file

/** unix socket with auth/local, or a slurmrestd that needs nothing. */
export function noAuth(): TokenSource {
  return {
    headers: async () => ({}),
    invalidate: () => undefined,
    describe: () => 'no authentication (auth/local or none)',
  };
}

export interface StaticTokenOptions {
  readonly token: string;
  /** Defaults to the token's `sun` claim when it has one. */
  readonly userName?: string;
}

export function staticToken(opts: StaticTokenOptions): TokenSource {
  const token = opts.token.trim();
  if (token === '' || /\s/.test(token)) throw new AuthError('static token is empty or contains whitespace');
  const user = opts.userName ?? peekJwt(token).user;
  const headers = authHeaders(token, user);
  return {
    headers: async () => ({ ...headers }),
    // Nothing to renew: the client reports the auth failure.
    invalidate: () => undefined,
    describe: () => `static token${user !== undefined ? ` (user ${user})` : ''}`,
  };
}

/** A bare token or a `SLURM_JWT=...` line (as `scontrol token` prints it); comments ignored. */
export function parseTokenText(text: string): string | undefined {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const assignment = lines.map((l) => /^(?:export\s+)?SLURM_JWT=(.*)$/.exec(l)?.[1]).find((v) => v !== undefined);
  const raw = (assignment ?? lines[0] ?? '').trim().replace(/^(["'])(.*)\1$/, '$2');
  return raw === '' || /\s/.test(raw) ? undefined : raw;
}

export interface TokenFileOptions {
  readonly path: string;
  /** Defaults to the token's `sun` claim. */
  readonly userName?: string;
}

/** A token kept fresh by someone else (a sidecar, cron): re-read whenever the file changes. */
export function tokenFile(opts: TokenFileOptions): TokenSource {
  let cached: { readonly stamp: string; readonly headers: Record<string, string> } | undefined;
  const load = async (stamp: string): Promise<Record<string, string>> => {
    const token = parseTokenText(await readFile(opts.path, 'utf8'));
    if (token === undefined) throw new AuthError(`token file ${opts.path} holds no token`);
    const headers = authHeaders(token, opts.userName ?? peekJwt(token).user);
    cached = { stamp, headers };
    return headers;
  };
  return {
    headers: async () => {
      try {
        const st = await stat(opts.path);
        // ino catches an atomic rename-over; mtime and size catch an in-place rewrite.
        const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
        return { ...(cached?.stamp === stamp ? cached.headers : await load(stamp)) };
      } catch (err) {
        throw err instanceof AuthError ? err : new AuthError(`cannot read token file ${opts.path}: ${errCode(err)}`);
      }
    },
    invalidate: () => {
      cached = undefined;
    },
    describe: () => `token file ${opts.path}`,
  };
}

// ---------------------------------------------------------------------------------------------
// renewing sources

/** A credential with its validity window (Unix seconds). */
export interface MintedToken {
  readonly token: string;
  readonly user?: string;
  readonly iat: number;
  readonly exp: number;
}

/**
 * Holds the current token and renews it when it is close to expiry. Concurrent callers share one
 * renewal (three sub-collectors starting together run scontrol once, not three times).
 */
export class RenewingToken {
  private current: MintedToken | undefined;
  private pending: Promise<MintedToken> | undefined;
  private generation = 0;

  constructor(
    private readonly mint: () => Promise<MintedToken>,
    private readonly nowSec: () => number,
  ) {}

  async get(): Promise<MintedToken> {
    const cur = this.current;
    if (cur !== undefined && !needsRenewal(this.nowSec(), cur.iat, cur.exp)) return cur;
    this.pending ??= this.renew();
    return this.pending;
  }

  invalidate(): void {
    this.generation++;
    this.current = undefined;
    this.pending = undefined;
  }

  private async renew(): Promise<MintedToken> {
    const gen = this.generation;
    try {
      const minted = await this.mint();
      // A token minted before an invalidate() is handed to its waiters but not kept.
      if (gen === this.generation) this.current = minted;
      return minted;
    } finally {
      if (gen === this.generation) this.pending = undefined;
    }
  }
}

export interface SignerOptions {
  /** `sun` claim and user header (default root). */
  readonly user?: string;
  readonly lifetimeSec?: number;
  /** Clock in milliseconds (tests). */
  readonly now?: () => number;
}

/**
 * Signs HS256 tokens with a key from `loadKey` (a file, a Kubernetes Secret). The key is loaded
 * once and again after invalidate(), since a rejected token may mean the key was rotated.
 */
export function signingTokenSource(
  loadKey: () => Promise<Uint8Array>,
  label: string,
  opts: SignerOptions,
): TokenSource {
  const user = opts.user ?? 'root';
  const lifetime = Math.floor(opts.lifetimeSec ?? DEFAULT_TOKEN_LIFETIME_SEC);
  if (!(lifetime > 0)) throw new AuthError(`token lifetime must be positive, got ${opts.lifetimeSec}`);
  const nowSec = (): number => Math.floor((opts.now ?? Date.now)() / 1000);
  let key: Promise<Uint8Array> | undefined;
  const mint = async (): Promise<MintedToken> => {
    key ??= loadKey();
    const bytes = await key.catch((err: unknown) => {
      key = undefined;
      throw err;
    });
    const iat = nowSec();
    const exp = iat + lifetime;
    return { token: await signHs256(bytes, user, iat, exp), user, iat, exp };
  };
  const token = new RenewingToken(mint, nowSec);
  return {
    headers: async () => {
      const t = await token.get();
      return authHeaders(t.token, t.user);
    },
    invalidate: () => {
      key = undefined;
      token.invalidate();
    },
    describe: () => `HS256 signer (${label}, user ${user}, lifetime ${lifetime} s)`,
  };
}

export async function signHs256(key: Uint8Array, user: string, iat: number, exp: number): Promise<string> {
  return new SignJWT({ sun: user })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key);
}

export interface KeyFileSignerOptions extends SignerOptions {
  /** The cluster's `jwt_hs256.key`: its bytes, as they are, are the key. */
  readonly keyFile: string;
}

export function keyFileSigner(opts: KeyFileSignerOptions): TokenSource {
  const load = async (): Promise<Uint8Array> => {
    let bytes: Buffer;
    try {
      bytes = await readFile(opts.keyFile);
    } catch (err) {
      throw new AuthError(`cannot read JWT key file ${opts.keyFile}: ${errCode(err)}`);
    }
    if (bytes.length === 0) throw new AuthError(`JWT key file ${opts.keyFile} is empty`);
    return new Uint8Array(bytes);
  };
  return signingTokenSource(load, `key file ${opts.keyFile}`, opts);
}

export interface ScontrolTokenOptions {
  /** `username=` argument; omitted when undefined (a token for the agent's own user). */
  readonly user?: string;
  readonly lifespanSec?: number;
  /** Executable (default `scontrol`, looked up in PATH). */
  readonly command?: string;
  readonly timeoutMs?: number;
  /** Environment for the child; the parent's when undefined. */
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
}

/** Runs `scontrol token` and renews before the token's own `exp`. */
export function scontrolToken(opts: ScontrolTokenOptions = {}): TokenSource {
  const lifespan = Math.floor(opts.lifespanSec ?? DEFAULT_TOKEN_LIFETIME_SEC);
  if (!(lifespan > 0)) throw new AuthError(`token lifespan must be positive, got ${opts.lifespanSec}`);
  const command = opts.command ?? 'scontrol';
  const args = ['token', ...(opts.user !== undefined ? [`username=${opts.user}`] : []), `lifespan=${lifespan}`];
  const nowSec = (): number => Math.floor((opts.now ?? Date.now)() / 1000);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_SCONTROL_TIMEOUT_MS;
  // A process group of its own, killed at close with whatever it started: a stop never waits for it.
  const runner = new ChildRunner(command, { timeoutMs, maxOutput: 1024 * 1024 }, opts.env ? { env: opts.env } : {});
  const mint = async (): Promise<MintedToken> => {
    const stdout = await runScontrol(runner, command, args, timeoutMs);
    const token = /^SLURM_JWT=(\S+)\s*$/m.exec(stdout)?.[1];
    if (token === undefined) throw new AuthError(`${command} token printed no SLURM_JWT= line`);
    const claims = peekJwt(token);
    const iat = claims.iat ?? nowSec();
    return { token, user: opts.user ?? claims.user, iat, exp: claims.exp ?? iat + lifespan };
  };
  const token = new RenewingToken(mint, nowSec);
  return {
    headers: async () => {
      const t = await token.get();
      return authHeaders(t.token, t.user);
    },
    invalidate: () => token.invalidate(),
    describe: () => `scontrol token (${opts.user !== undefined ? `user ${opts.user}, ` : ''}lifespan ${lifespan} s)`,
    close: () => runner.stop(),
  };
}

async function runScontrol(
  runner: ChildRunner,
  command: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<string> {
  try {
    return await runner.run(command, args);
  } catch (err) {
    const e = err as RunError;
    if (e.kind === 'timeout') throw new AuthError(`${command} token did not finish within ${timeoutMs} ms`);
    if (e.kind === 'start' && e.detail.code === 'ENOENT') throw new AuthError(`${command} not found`);
    if (e.kind === 'exit') {
      const why = redact((e.detail.stderr ?? '').trim()).slice(0, 200);
      throw new AuthError(`${command} token failed (exit ${e.detail.status ?? '?'})${why ? `: ${why}` : ''}`);
    }
    throw new AuthError(`${command} token: ${redact(e.message)}`);
  }
}

function errCode(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  return typeof code === 'string' ? code : redact(String((err as Error)?.message ?? err));
}
