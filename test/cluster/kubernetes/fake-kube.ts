/**
 * A fake Kubernetes API server on loopback (plain http) that serves Secrets: enough of
 * `GET /api/v1/namespaces/<ns>/secrets/<name>` to test the Secret key source, with bearer-token
 * checks, a forbidden mode and key rotation; and Pod and Node lists with label selectors
 * (`k=v` and `k` terms), for the topology source. Objects are shaped as the real API sends them
 * (a PodList's items carry metadata, spec with containers, status; a NodeList's the same), and
 * the server counts the TCP connections it accepted.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface FakeKubeOptions {
  /** Bearer token the server accepts. */
  readonly bearer: string;
  /** namespace/name → data (values are raw bytes; the server base64-encodes them). */
  readonly secrets: Record<string, Record<string, Buffer>>;
  readonly pods?: readonly FakePod[];
  readonly nodes?: readonly FakeNode[];
}

export interface FakePod {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Record<string, string>;
  /** Unset: not scheduled yet. */
  readonly nodeName?: string;
}

export interface FakeNode {
  readonly name: string;
  readonly labels: Record<string, string>;
}

/** `a=b,c`: every `k=v` term equal, every bare `k` present. */
function matches(selector: string, labels: Record<string, string>): boolean {
  return selector
    .split(',')
    .filter(Boolean)
    .every((term) => {
      const [k, v] = term.split('=');
      return v === undefined ? (k as string) in labels : labels[k as string] === v;
    });
}

export class FakeKube {
  readonly requests: { path: string; authorization: string | undefined }[] = [];
  /** TCP connections accepted so far. */
  connections = 0;
  /** When set, every request is answered 403 (RBAC without `get secrets`). */
  forbidden = false;
  /** When set and it gives a body for a path, that body is the 200 answer (broken responses). */
  rawBody: ((pathname: string) => string | undefined) | undefined;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    readonly opts: FakeKubeOptions,
  ) {}

  static async start(opts: FakeKubeOptions): Promise<FakeKube> {
    const server = http.createServer((req, res) => self.handle(req, res));
    server.on('connection', () => self.connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const self = new FakeKube(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, opts);
    return self;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '/';
    this.requests.push({ path, authorization: req.headers.authorization });
    if (req.headers.authorization !== `Bearer ${this.opts.bearer}`) return status(res, 401, 'Unauthorized');
    if (this.forbidden) return status(res, 403, 'Forbidden');
    const url = new URL(path, 'http://fake');
    const raw = this.rawBody?.(url.pathname);
    if (raw !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(raw);
    }
    const selector = url.searchParams.get('labelSelector') ?? '';
    const pods = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    if (pods) {
      const ns = decodeURIComponent(pods[1] as string);
      const items = (this.opts.pods ?? [])
        .filter((p) => p.namespace === ns && matches(selector, p.labels))
        .map((p, i) => ({
          metadata: {
            name: p.name,
            namespace: p.namespace,
            uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            resourceVersion: String(100 + i),
            creationTimestamp: '2026-01-01T00:00:00Z',
            labels: p.labels,
          },
          spec: {
            containers: [{ name: 'slurmd', image: 'cr.example/slurmd:25.11' }],
            ...(p.nodeName === undefined ? {} : { nodeName: p.nodeName }),
          },
          status: p.nodeName === undefined ? { phase: 'Pending' } : { phase: 'Running', hostIP: '10.0.0.1' },
        }));
      return list(res, 'PodList', items);
    }
    if (url.pathname === '/api/v1/nodes') {
      const items = (this.opts.nodes ?? [])
        .filter((n) => matches(selector, n.labels))
        .map((n, i) => ({
          metadata: { name: n.name, uid: `node-${i}`, resourceVersion: String(200 + i), labels: n.labels },
          spec: { providerID: `fake://${n.name}` },
          status: { conditions: [{ type: 'Ready', status: 'True' }] },
        }));
      return list(res, 'NodeList', items);
    }
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/?]+)$/.exec(path);
    const secret = m
      ? this.opts.secrets[`${decodeURIComponent(m[1] as string)}/${decodeURIComponent(m[2] as string)}`]
      : undefined;
    if (secret === undefined) return status(res, 404, 'NotFound');
    const data = Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, v.toString('base64')]));
    const body = JSON.stringify({
      kind: 'Secret',
      apiVersion: 'v1',
      metadata: { name: m?.[2], namespace: m?.[1] },
      type: 'Opaque',
      data,
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  }
}

function list(res: http.ServerResponse, kind: string, items: unknown[]): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind, apiVersion: 'v1', metadata: { resourceVersion: '1' }, items }));
}

function status(res: http.ServerResponse, code: number, reason: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code }));
}

/** Writes a kubeconfig (JSON) in `dir` for `server`, a bearer `token` and namespace `slurm`; gives its path. */
export function writeKubeconfig(dir: string, server: string, token: string): string {
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'slurm' } }],
      users: [{ name: 'u', user: { token } }],
    }),
  );
  return file;
}
