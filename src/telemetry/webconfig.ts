/**
 * Endpoint security from a web config file, in the format Prometheus
 * exporters take with --web.config.file (exporter-toolkit):
 *
 *   tls_server_config: { cert_file, key_file, client_ca_file?, client_auth_type? }
 *   basic_auth_users: { <user>: <bcrypt hash> }
 *
 * Relative paths are resolved against the config file's directory.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { parse as parseYaml } from 'yaml';

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
  readonly requireClientCert: boolean;
}

export interface WebConfig {
  readonly tls?: TlsFiles;
  /** user → bcrypt hash; empty means no authentication. */
  readonly users: ReadonlyMap<string, string>;
}

export class WebConfigError extends Error {}

const CLIENT_AUTH = new Set(['NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert']);

export function loadWebConfig(file: string): WebConfig {
  let doc: unknown;
  try {
    doc = parseYaml(fs.readFileSync(file, 'utf8')) ?? {};
  } catch (err) {
    throw new WebConfigError(`web config ${file}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new WebConfigError(`web config ${file}: expected a mapping`);
  const d = doc as Record<string, unknown>;
  const unknown = Object.keys(d).filter((k) => !['tls_server_config', 'basic_auth_users', 'http_server_config'].includes(k));
  if (unknown.length) throw new WebConfigError(`web config ${file}: unknown key(s) ${unknown.join(', ')}`);
  const dir = path.dirname(file);
  return { tls: d.tls_server_config ? readTls(d.tls_server_config, dir, file) : undefined, users: readUsers(d.basic_auth_users, file) };
}

function readTls(v: unknown, dir: string, file: string): TlsFiles {
  const t = (v ?? {}) as Record<string, unknown>;
  const read = (key: string): Buffer => {
    const p = t[key];
    if (typeof p !== 'string' || p === '') throw new WebConfigError(`web config ${file}: tls_server_config.${key} is required`);
    try {
      return fs.readFileSync(path.resolve(dir, p));
    } catch (err) {
      throw new WebConfigError(`web config ${file}: cannot read ${key} ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const auth = typeof t.client_auth_type === 'string' ? t.client_auth_type : 'NoClientCert';
  if (!CLIENT_AUTH.has(auth)) throw new WebConfigError(`web config ${file}: client_auth_type "${auth}" is not one of ${[...CLIENT_AUTH].join(', ')}`);
  const ca = typeof t.client_ca_file === 'string' ? read('client_ca_file') : undefined;
  return { cert: read('cert_file'), key: read('key_file'), ...(ca ? { ca } : {}), requireClientCert: auth === 'RequireAndVerifyClientCert' || auth === 'RequireAnyClientCert' };
}

function readUsers(v: unknown, file: string): Map<string, string> {
  const users = new Map<string, string>();
  if (v === undefined || v === null) return users;
  if (typeof v !== 'object' || Array.isArray(v)) throw new WebConfigError(`web config ${file}: basic_auth_users must map user names to bcrypt hashes`);
  for (const [user, hash] of Object.entries(v as Record<string, unknown>)) {
    if (typeof hash !== 'string' || !/^\$2[abxy]?\$\d\d\$/.test(hash)) throw new WebConfigError(`web config ${file}: the password of "${user}" is not a bcrypt hash`);
    users.set(user, hash);
  }
  return users;
}

/**
 * Checks an Authorization header against the users. bcrypt is slow by design
 * (tens of ms): a successful check is remembered by a digest of the header so
 * a scraper every 15 s does not pay it each time.
 */
export class BasicAuth {
  private readonly verified = new Map<string, Buffer>();

  constructor(private readonly users: ReadonlyMap<string, string>) {}

  get enabled(): boolean {
    return this.users.size > 0;
  }

  check(header: string | undefined): boolean {
    if (!this.enabled) return true;
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/.exec(header ?? '');
    if (!m) return false;
    const digest = createHash('sha256').update(m[1] as string).digest();
    const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    const user = decoded.slice(0, colon);
    const hash = this.users.get(user);
    if (!hash) return false;
    const known = this.verified.get(user);
    if (known && timingSafeEqual(known, digest)) return true;
    if (!bcrypt.compareSync(decoded.slice(colon + 1), hash)) return false;
    this.verified.set(user, digest);
    return true;
  }
}
