/**
 * The attacks on the agents' HTTP endpoints, on real sockets over loopback: connections that never
 * finish their headers (slowloris), each reopened as soon as it is closed; wrong passwords from
 * rotating source addresses; and a plain scraper. Each may bind its own loopback source address
 * (127.x.y.z) to stand for a distinct client.
 */
import http from 'node:http';
import net from 'node:net';

export interface Attack {
  /** Connections the attack has opened so far (reopenings included). */
  opened(): number;
  /** Ends the attack: no more reopening, every socket destroyed. */
  stop(): Promise<void>;
}

export interface SlowlorisOptions {
  readonly port: number;
  /** Source addresses the connections are spread over, round robin (e.g. ['127.0.0.2']). */
  readonly from: readonly string[];
  /** Connections held open at once. */
  readonly connections: number;
  /** Between two header bytes on each connection. */
  readonly trickleMs?: number;
  /** The attack stops itself after this long, whatever the test does (every loop bounded). */
  readonly maxMs?: number;
}

/**
 * Holds `connections` connections that send a request line and then one header byte at a time,
 * never the blank line that ends the headers; a connection closed by the server is opened again
 * at once.
 */
export function slowloris(o: SlowlorisOptions): Attack {
  const live = new Set<net.Socket>();
  let opened = 0;
  let stopped = false;
  const trickle = setInterval(() => {
    for (const s of live) if (s.writable) s.write('a');
  }, o.trickleMs ?? 200);
  const open = (slot: number): void => {
    if (stopped) return;
    opened++;
    const localAddress = o.from[slot % o.from.length] as string;
    const s = net.connect({ port: o.port, host: '127.0.0.1', localAddress });
    live.add(s);
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    s.once('connect', () => s.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    // Reopened on the next turn of the loop, not inside the close: a server that closes at once
    // must not turn this into a synchronous recursion.
    s.once('close', () => {
      live.delete(s);
      setImmediate(() => open(slot));
    });
  };
  for (let i = 0; i < o.connections; i++) open(i);
  const selfStop = setTimeout(() => void stop(), o.maxMs ?? 120_000);
  const stop = async (): Promise<void> => {
    stopped = true;
    clearInterval(trickle);
    clearTimeout(selfStop);
    const closing = [...live].map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())));
    for (const s of live) s.destroy();
    await Promise.all(closing);
  };
  return { opened: () => opened, stop };
}

export interface Answer {
  readonly status: number;
  readonly body: string;
}

/**
 * One GET on a fresh connection from `localAddress`; undefined when the connection is refused,
 * closed or reset before an answer (a scraper would count that scrape as failed).
 */
export function scrapeOnce(
  url: string,
  localAddress = '127.0.0.1',
  headers: http.OutgoingHttpHeaders = {},
): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const req = http.get(url, { localAddress, agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    // A scraper gives up on a scrape after a while; the caller polls again.
    req.setTimeout(10_000, () => req.destroy());
  });
}

export interface Flood {
  /** Answers the flood has had, by status (0: no answer, the connection closed or refused). */
  statuses(): ReadonlyMap<number, number>;
  stop(): Promise<void>;
}

export interface PasswordFloodOptions {
  readonly url: string;
  /** The source address of the n-th request (rotating addresses). */
  readonly from: (n: number) => string;
  /** Requests in flight at once, each sent again as soon as it is answered. */
  readonly concurrency: number;
  /** The Authorization header of the n-th request (a wrong password). */
  readonly authorization: (n: number) => string;
  /** The flood stops itself after this long, whatever the test does (every loop bounded). */
  readonly maxMs?: number;
}

/** Requests with wrong passwords, each on a new connection from the next source address. */
export function passwordFlood(o: PasswordFloodOptions): Flood {
  const statuses = new Map<number, number>();
  let n = 0;
  let stopped = false;
  const selfStop = setTimeout(() => (stopped = true), o.maxMs ?? 120_000);
  const loop = async (): Promise<void> => {
    while (!stopped) {
      const i = n++;
      const a = await scrapeOnce(o.url, o.from(i), { authorization: o.authorization(i) });
      statuses.set(a?.status ?? 0, (statuses.get(a?.status ?? 0) ?? 0) + 1);
    }
  };
  const loops = Array.from({ length: o.concurrency }, () => loop());
  return {
    statuses: () => statuses,
    stop: async () => {
      stopped = true;
      clearTimeout(selfStop);
      await Promise.all(loops);
    },
  };
}
