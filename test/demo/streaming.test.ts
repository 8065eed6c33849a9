/**
 * A 100k-job `/jobs/` body (~540 MB, more than V8's longest string) goes out of the fake
 * slurmrestd with bounded memory: the renderer yields element by element and the server waits for
 * the socket to drain. A client that stops reading must stop the rendering too. The server says
 * what it is doing (streams active, waiting for their client, bytes written), so the test waits on
 * that, never on time; how fast it streams is measured by bench/streaming.ts.
 *
 * Memory is what the process still holds after a full garbage collection (V8's heap and the
 * buffers outside it), not RSS: how far RSS runs ahead of that is V8's heap sizing, which differs
 * between Node lines (on Node 24 the same stream peaked at 263 MB of RSS growth in one run and
 * 480 MB in the next, holding 60 MB in both), while a server that kept the body would hold hundreds
 * of MB on every line.
 */
import { get as httpGet } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bigCluster } from '../support/big-cluster.js';
import { waitFor } from '../support/tools.js';
import { startFakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import type { FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';

const MB = 1e6;

// A context made after the flag is set has V8's gc(); the test process's own flags stay as they are.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes still held after a full collection: the heap's live objects and the buffers outside it. */
function heldBytes(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

function request(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => httpGet(url, resolve).on('error', reject));
}

describe('streaming a 100k-job body', () => {
  let server: FakeSlurmrestd;

  beforeAll(async () => {
    const cluster = bigCluster({ nodes: 20_000, jobs: 100_000, seed: 1 });
    server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'] });
  }, 60_000);
  afterAll(async () => server.close());

  it('holds back while the client does not read, then streams it all holding bounded memory', async () => {
    const base = heldBytes();
    const res = await request(`${server.url}/slurm/v0.0.44/jobs/`);
    expect(res.statusCode).toBe(200);
    const chunks = res[Symbol.asyncIterator]();
    const first = await chunks.next();
    const head = Buffer.from(first.value as Buffer)
      .subarray(0, 9)
      .toString();
    res.pause();
    // Unthrottled, the renderer would queue the whole body into the socket and never wait.
    await waitFor('the server to wait for the paused client', () => server.streaming().waitingForClient === 1);
    const whilePaused = server.streaming().bytesWritten;
    const heldWhilePaused = heldBytes() - base;
    let bytes = (first.value as Buffer).length;
    let peak = heldBytes();
    let last: Buffer = Buffer.alloc(0);
    let n = 0;
    for (let r = await chunks.next(); r.done !== true; r = await chunks.next()) {
      const chunk = r.value as Buffer;
      bytes += chunk.length;
      last = chunk;
      if (++n % 256 === 0) peak = Math.max(peak, heldBytes());
    }
    expect(head).toBe('{"jobs":[');
    expect(last.toString().endsWith('"errors":[],"warnings":[]}')).toBe(true);
    expect(bytes).toBeGreaterThan(450 * MB);
    expect(bytes).toBe(server.streaming().bytesWritten);
    expect(whilePaused).toBeLessThan(100 * MB);
    expect(heldWhilePaused).toBeLessThan(100 * MB);
    expect(peak - base).toBeLessThan(150 * MB);
  }, 120_000);

  it('stops rendering for a client that goes away, and keeps serving', async () => {
    const res = await request(`${server.url}/slurm/v0.0.44/jobs/`);
    await res[Symbol.asyncIterator]().next();
    expect(server.streaming().active).toBe(1);
    res.destroy();
    await waitFor('the renderer to stop for the departed client', () => server.streaming().active === 0);
    const diag = await request(`${server.url}/slurm/v0.0.44/diag/`);
    expect(diag.statusCode).toBe(200);
    diag.resume();
  }, 60_000);
});
