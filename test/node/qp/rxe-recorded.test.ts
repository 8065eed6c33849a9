/**
 * The node agent's readers on what a real kernel RDMA stack showed: fixtures/node/rxe, recorded
 * in the soft-RoCE guest (Debian 12's kernel, rdma_rxe on dummy netdevs, after ibv_rc_pingpong
 * traffic over rxe0; see its README). No qemu here: the files are read as recorded.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readHcas, UverbsMap, verbsByDevice } from '../../../src/node/read/hca.js';
import { NodeCollector } from '../../../src/node/collect.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { dataCounter } from '../../../src/node/observe.js';
import { Problems } from '../../../src/node/read/problems.js';
import { autoOff } from '../../../src/node/qp/qp-parse.js';
import { parseLinkModes, parseQpCounters, parseQpResources } from '../../support/qp-text.js';
import { QpSource } from '../../../src/node/qp/qp-source.js';
import { RecordingRdma } from '../../support/recording-rdma.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { capturingLogger } from '../../support/log.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

const FIXTURE = path.resolve('fixtures/node/rxe');
const SYSFS = path.join(FIXTURE, 'sysfs');
const RXE = ['rxe0', 'rxe1', 'rxe2', 'rxe3'];
const rdmaJson = (name: string): string => fs.readFileSync(path.join(FIXTURE, 'rdma', name), 'utf8');

/** hw_counters of a device's port 1 as recorded, file by file (name → value). */
function hwCounters(device: string): Map<string, bigint> {
  const dir = path.join(SYSFS, 'class/infiniband', device, 'ports/1/hw_counters');
  return new Map(fs.readdirSync(dir).map((f) => [f, BigInt(fs.readFileSync(path.join(dir, f), 'utf8').trim())]));
}

describe('sysfs of rdma_rxe, as recorded', () => {
  it('four HCAs with one Ethernet port each, ACTIVE/LinkUp at 2.5 Gb/s, and no counters/ directory', () => {
    const problems = new Problems();
    const scan = readHcas(SYSFS, problems);
    expect(scan.present).toBe(true);
    expect(scan.failure).toBeUndefined();
    expect(scan.hcas.map((h) => h.device)).toEqual(RXE);
    for (const h of scan.hcas) {
      expect(h.nodeGuid).toMatch(/^[0-9a-f]{4}(:[0-9a-f]{4}){3}$/);
      expect(h.boardId ?? '').toBe(''); // rxe has no board_id, no hca_type and an empty fw_ver
      expect(h.hcaType ?? '').toBe('');
      expect(h.ports).toHaveLength(1);
      const p = h.ports[0];
      expect(p).toMatchObject({ port: '1', stateId: 4, physStateId: 5, linkLayer: 'Ethernet' });
      expect(p?.rateBytesPerSecond).toBe(312_500_000);
      expect(fs.existsSync(path.join(SYSFS, 'class/infiniband', h.device, 'ports/1/counters'))).toBe(false);
    }
    expect(problems.list()).toEqual([]);
  });

  it('every hw_counters file is a counter, exact, but lifespan (a setting); no data words, so no bytes', () => {
    const scan = readHcas(SYSFS, new Problems());
    for (const h of scan.hcas) {
      const expected = hwCounters(h.device);
      expect(expected.get('lifespan')).toBeDefined();
      expected.delete('lifespan');
      const counters = h.ports[0]?.counters ?? new Map<string, bigint>();
      expect(new Map(counters)).toEqual(expected);
      expect(dataCounter(counters, 'xmit')).toBeUndefined();
      expect(dataCounter(counters, 'rcv')).toBeUndefined();
    }
    // The recorded traffic: rxe0 carried it all, on both ends (one device), the others none.
    const rxe0 = hwCounters('rxe0');
    expect(rxe0.get('rdma_sends')).toBeGreaterThan(0n);
    expect(rxe0.get('rdma_sends')).toBe(rxe0.get('rdma_recvs'));
    expect(rxe0.get('sent_pkts')).toBe(rxe0.get('rcvd_pkts'));
    expect(hwCounters('rxe3').get('sent_pkts')).toBe(0n);
  });

  it('the device families: hw_counters under their names, no transmit/receive bytes', () => {
    const empty = tmpDir();
    const c = new NodeCollector({
      roots: { sysfs: SYSFS, procfs: empty, cgroupfs: empty },
      fdRescanIntervalMs: 60_000,
    }).cycle();
    expect(c.failed).toBeUndefined();
    const points = (name: string) => (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];
    const counters = points(NODE_METRICS.deviceCounters.name).filter((p) => p.attributes.device === 'rxe0');
    const expected = hwCounters('rxe0');
    expected.delete('lifespan');
    expect(new Map(counters.map((p) => [p.attributes.counter, p.value]))).toEqual(expected);
    expect(points(NODE_METRICS.deviceTransmitBytes.name)).toEqual([]);
    expect(points(NODE_METRICS.deviceReceiveBytes.name)).toEqual([]);
    expect(points(NODE_METRICS.portUp.name).map((p) => [p.attributes.device, p.value])).toEqual(RXE.map((d) => [d, 1]));
  });

  it('uverbsN/dev is the decimal major:minor (231:192…) and uverbsN/ibdev names the HCA', () => {
    const verbs = verbsByDevice(SYSFS, new Problems());
    expect(verbs.gaps).toEqual([]);
    expect([...verbs.byDevice]).toEqual(RXE.map((_, i) => [`231:${192 + i}`, `uverbs${i}`]));
    const map = new UverbsMap(SYSFS, new Problems());
    expect(RXE.map((_, i) => map.device(`uverbs${i}`))).toEqual(RXE);
    // stat in the guest gave the same numbers in hex (e7:c0 …): one device, two spellings.
    for (const line of fs.readFileSync(path.join(FIXTURE, 'uverbs.txt'), 'utf8').trim().split('\n')) {
      const [, , dec, hex] = line.split(' ') as [string, string, string, string];
      expect(
        hex
          .split(':')
          .map((h) => parseInt(h, 16))
          .join(':'),
      ).toBe(dec);
    }
  });
});

describe('rdma -j JSON of rdma_rxe, as recorded', () => {
  it('resource show qp: pid per user QP, the kernel GSI QPs without one', () => {
    const raw = JSON.parse(rdmaJson('resource-qp.traffic.json')) as Record<string, unknown>[];
    const kernel = raw.filter((q) => q.type === 'GSI');
    expect(kernel.map((q) => q.ifname)).toEqual(RXE);
    expect(kernel.every((q) => q.pid === undefined && q.comm === 'ib_core')).toBe(true);
    const user = raw.filter((q) => q.pid !== undefined);
    expect(user.every((q) => q.comm === 'ibv_rc_pingpong')).toBe(true);
    const r = parseQpResources(rdmaJson('resource-qp.traffic.json'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.filter((q) => q.pid !== undefined).map((q) => [q.device, q.pid])).toEqual(
      user.map((q) => [q.ifname, q.pid]),
    );
    expect(r.value.filter((q) => q.pid === undefined).map((q) => q.device)).toEqual(RXE);
    // Traffic: job 101's holder (INIT, never connected), its server and its client (RTS) on rxe0.
    expect(user.filter((q) => q.ifname === 'rxe0').map((q) => q.state)).toEqual(['INIT', 'RTS', 'RTS']);
  });

  it('statistic qp: the mode takes auto type,pid on, and no QP ever gets a counter', () => {
    const modes = parseLinkModes(rdmaJson('statistic-qp-mode.json'));
    expect(modes.ok && modes.value.map((m) => [m.device, m.mode, autoOff(m.mode)])).toEqual(
      RXE.map((d) => [d, 'qp auto type,pid on', false]),
    );
    for (const name of ['statistic-qp.s1.json', 'statistic-qp.traffic.json'])
      expect(parseQpCounters(rdmaJson(name))).toEqual({ ok: true, value: [] });
  });

  it('the agent reading those outputs says the per-job QP counters are unavailable, on the links with QPs', async () => {
    const rdma = new RecordingRdma(tmpDir('fake-rdma-'));
    fs.writeFileSync(path.join(rdma.dir, 'stat.json'), rdmaJson('statistic-qp.traffic.json'));
    fs.writeFileSync(path.join(rdma.dir, 'resource.json'), rdmaJson('resource-qp.traffic.json'));
    fs.writeFileSync(path.join(rdma.dir, 'mode.json'), rdmaJson('statistic-qp-mode.json'));
    const { logger, lines } = capturingLogger();
    const source = new QpSource({ path: rdma.path, mode: 'observe', timeoutMs: 5000, logger });
    try {
      source.want(RXE.map((d) => `${d}/1`));
      const said = () => lines.filter((l) => /per-job QP counters unavailable/.test(l.msg)).map((l) => l.link);
      await waitFor('the links reported', () => said().length >= 3);
      expect(said()).toEqual(['rxe0/1', 'rxe1/1', 'rxe2/1']); // rxe3 holds only the kernel's QP
      expect(source.latest()?.counters).toEqual([]);
    } finally {
      source.stop();
    }
  });
});
