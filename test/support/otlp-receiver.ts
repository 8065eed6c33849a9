/**
 * A local OTLP/HTTP metrics receiver for tests (no Collector binary exists
 * for these machines): accepts JSON and protobuf, decodes both into one
 * shape, and can be told to fail or to refuse points in a 200 answer (OTLP partial success).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedPoint {
  readonly metric: string;
  /** Name of the instrumentation scope the metric came in. */
  readonly scope: string;
  readonly kind: 'sum' | 'gauge' | 'histogram';
  readonly monotonic?: boolean;
  readonly attributes: Record<string, string>;
  readonly value: number;
  readonly startNs: bigint;
}

export interface Received {
  readonly contentType: string;
  readonly resource: Record<string, string>;
  readonly points: ReceivedPoint[];
  /** The request's Authorization header, when it had one. */
  readonly authorization?: string;
}

export interface Receiver {
  readonly url: string;
  readonly requests: Received[];
  failNext(n: number): void;
  /** The next `n` answers are 200 with `partialSuccess` refusing `points` points because of `message`. */
  refuseNext(n: number, points: number, message: string): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  let failures = 0;
  let refusals: { n: number; points: number; message: string } = { n: 0, points: 0, message: '' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (failures > 0) {
        failures--;
        res.writeHead(503).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const type = req.headers['content-type'] ?? '';
      const json = type.includes('json');
      const decoded = json ? fromJson(body.toString('utf8'), type) : fromProtobuf(body, type);
      const authorization = req.headers.authorization;
      requests.push(authorization === undefined ? decoded : { ...decoded, authorization });
      let answer: string | Buffer | undefined = json ? '{}' : undefined;
      if (refusals.n > 0) {
        refusals.n--;
        answer = partialSuccess(json, refusals.points, refusals.message);
      }
      res.writeHead(200, { 'content-type': type }).end(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext: (n) => void (failures = n),
    refuseNext: (n, points, message) => void (refusals = { n, points, message }),
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * An ExportMetricsServiceResponse whose partial_success (field 1) refuses `points`
 * (rejected_data_points, field 1, int64) with `message` (error_message, field 2).
 */
function partialSuccess(json: boolean, points: number, message: string): string | Buffer {
  if (json) return JSON.stringify({ partialSuccess: { rejectedDataPoints: String(points), errorMessage: message } });
  const varint = (v: number): number[] => {
    const out: number[] = [];
    for (; v >= 0x80; v = Math.floor(v / 128)) out.push((v % 128) | 0x80);
    return [...out, v];
  };
  const text = Buffer.from(message, 'utf8');
  const inner = Buffer.from([0x08, ...varint(points), 0x12, ...varint(text.length), ...text]);
  return Buffer.from([0x0a, ...varint(inner.length), ...inner]);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- decoded OTLP JSON, whose shape the tests assert
type J = Record<string, any>;

function attrs(list: J[] | undefined): Record<string, string> {
  return Object.fromEntries(
    (list ?? []).map((kv) => [
      kv.key,
      String(kv.value?.stringValue ?? kv.value?.intValue ?? kv.value?.doubleValue ?? ''),
    ]),
  );
}

function fromJson(text: string, contentType: string): Received {
  const req = JSON.parse(text) as J;
  const points: ReceivedPoint[] = [];
  let resource: Record<string, string> = {};
  for (const rm of req.resourceMetrics ?? []) {
    resource = attrs(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const kind = m.sum ? 'sum' : m.gauge ? 'gauge' : 'histogram';
        for (const dp of (m.sum ?? m.gauge ?? m.histogram)?.dataPoints ?? []) {
          points.push({
            metric: m.name,
            scope: String(sm.scope?.name ?? ''),
            kind,
            monotonic: m.sum?.isMonotonic,
            attributes: attrs(dp.attributes),
            value: Number(dp.asDouble ?? dp.asInt ?? dp.count ?? 0),
            startNs: BigInt(dp.startTimeUnixNano ?? 0),
          });
        }
      }
    }
  }
  return { contentType, resource, points };
}

// Minimal protobuf wire decoding: enough of the OTLP metrics schema for assertions.
type Field = { n: number; wire: number; v: bigint | Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let r = 0n;
    for (let s = 0n; ; s += 7n) {
      const b = buf[i++] as number;
      r |= BigInt(b & 0x7f) << s;
      if (b < 0x80) return r;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const n = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ n, wire, v: varint() });
    else if (wire === 1) {
      out.push({ n, wire, v: buf.subarray(i, i + 8) });
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      out.push({ n, wire, v: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 5) {
      out.push({ n, wire, v: buf.subarray(i, i + 4) });
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const sub = (fs: Field[], n: number) => fs.filter((f) => f.n === n).map((f) => f.v as Buffer);
const str = (fs: Field[], n: number) => sub(fs, n)[0]?.toString('utf8') ?? '';

function pbAttrs(kvs: Buffer[]): Record<string, string> {
  return Object.fromEntries(
    kvs.map((kv) => {
      const f = fields(kv);
      return [str(f, 1), str(fields(sub(f, 2)[0] ?? Buffer.alloc(0)), 1)];
    }),
  );
}

function fromProtobuf(body: Buffer, contentType: string): Received {
  const points: ReceivedPoint[] = [];
  let resource: Record<string, string> = {};
  for (const rm of sub(fields(body), 1)) {
    const rmf = fields(rm);
    resource = pbAttrs(sub(fields(sub(rmf, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const sm of sub(rmf, 2)) {
      const scope = str(fields(sub(fields(sm), 1)[0] ?? Buffer.alloc(0)), 1);
      for (const m of sub(fields(sm), 2)) {
        const mf = fields(m);
        const [kind, data] = sub(mf, 7)[0]
          ? (['sum', sub(mf, 7)[0]] as const)
          : sub(mf, 5)[0]
            ? (['gauge', sub(mf, 5)[0]] as const)
            : (['histogram', sub(mf, 9)[0]] as const);
        const df = fields(data ?? Buffer.alloc(0));
        const monotonic = kind === 'sum' ? df.some((f) => f.n === 3 && f.v === 1n) : undefined;
        for (const dp of sub(df, 1)) {
          const pf = fields(dp);
          const dbl = sub(pf, 4)[0];
          const cnt = pf.find((f) => f.n === 4 && f.wire === 1);
          const value =
            kind === 'histogram'
              ? Number((cnt?.v as Buffer | undefined)?.readBigUInt64LE() ?? 0n)
              : dbl
                ? dbl.readDoubleLE()
                : 0;
          points.push({
            metric: str(mf, 1),
            scope,
            kind,
            monotonic,
            attributes: pbAttrs(sub(pf, kind === 'histogram' ? 9 : 7)),
            value,
            startNs: sub(pf, 2)[0]?.readBigUInt64LE() ?? 0n,
          });
        }
      }
    }
  }
  return { contentType, resource, points };
}
