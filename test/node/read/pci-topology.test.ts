import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  LocalityCache,
  parseChain,
  readLocality,
  relation,
  type PciPlace,
} from '../../../src/node/read/pci-topology.js';
import { Problems } from '../../../src/node/read/problems.js';
import { writePci, type PciSpec } from '../../../src/demo/nodetree.js';
import { tmpDir } from '../../support/tmp.js';

const HGX = path.resolve('fixtures/node/pci/hgx-a100');

interface Fixture {
  readonly gpus: readonly string[];
  readonly pci: PciSpec;
}

const fixture = (): Fixture => JSON.parse(fs.readFileSync(path.join(HGX, 'tree.json'), 'utf8')) as Fixture;

/** The listing's GPU rows: GPU<i> → its NIC<j> cells, by the header's column names. */
function listedMatrix(): string[][] {
  const [header, ...rows] = fs.readFileSync(path.join(HGX, 'topo-m-gpu-rows.txt'), 'utf8').trimEnd().split('\n');
  // The header's cells are split by runs of spaces but "CPU Affinity" has one space inside: the NIC
  // columns are found by name, and a row's cells after its name line up with the header's.
  const columns = (header as string).trim().split(/\s{2,}|\t/);
  const nics = columns.flatMap((c, i) => (/^NIC\d$/.test(c) ? [i] : []));
  expect(nics).toHaveLength(8);
  return rows.map((r) => {
    const cells = r.trim().split(/\s+/).slice(1);
    return nics.map((i) => cells[i] as string);
  });
}

function sysfsOf(spec: PciSpec): string {
  const sysfs = path.join(tmpDir(), 'sys');
  writePci(sysfs, spec);
  return sysfs;
}

describe('readLocality on the HGX A100-shaped tree', () => {
  it('equals the listing nvidia-smi topo -m printed, cell by cell', () => {
    const f = fixture();
    const hcas = Object.keys(f.pci.hcas);
    const problems = new Problems();
    const loc = readLocality(sysfsOf(f.pci), f.gpus, hcas, problems);
    expect(problems.list()).toEqual([]);
    const computed = f.gpus.map((g) => hcas.map((h) => loc.pairs.find((p) => p.gpu === g && p.hca === h)?.relation));
    const listed = listedMatrix();
    expect(listed.flat()).toContain('PXB');
    expect(computed).toEqual(listed);
  });

  it('gives each device its root complex, bridges and NUMA node', () => {
    const f = fixture();
    const loc = readLocality(sysfsOf(f.pci), f.gpus, ['mlx5_5'], new Problems());
    expect(loc.gpus.get('0000:f9:00.0')).toEqual({
      busId: '0000:f9:00.0',
      rootComplex: 'pci0000:ef',
      bridges: ['0000:ef:02.0', '0000:f0:00.0', '0000:f1:00.0', '0000:f2:00.0', '0000:f3:10.0'],
      numaNode: 1,
    });
    expect(loc.hcas.get('mlx5_5')).toMatchObject({ busId: '0000:a3:00.1', rootComplex: 'pci0000:97', numaNode: 1 });
  });

  it('reads sysfs again only when the device set changes', () => {
    const f = fixture();
    const sysfs = sysfsOf(f.pci);
    const cache = new LocalityCache();
    const first = readLocality(sysfs, f.gpus, ['mlx5_0'], new Problems(), cache);
    expect(readLocality(sysfs, f.gpus, ['mlx5_0'], new Problems(), cache)).toBe(first);
    expect(cache.reads).toBe(1);
    const more = readLocality(sysfs, f.gpus, ['mlx5_0', 'mlx5_1'], new Problems(), cache);
    expect(cache.reads).toBe(2);
    expect(more.pairs).toHaveLength(16);
  });
});

describe('readLocality where the tree does not tell', () => {
  const spec: PciSpec = {
    devices: ['pci0000:00/0000:00:01.0/0000:01:00.0', 'pci0000:80/0000:80:01.0/0000:81:00.0'],
    numa: {},
    hcas: { mlx5_0: '0000:81:00.0' },
  };

  it('says unknown, not NODE or SYS, across root complexes when numa_node is -1', () => {
    const loc = readLocality(sysfsOf(spec), ['0000:01:00.0'], ['mlx5_0'], new Problems());
    expect(loc.pairs).toEqual([{ gpu: '0000:01:00.0', hca: 'mlx5_0', relation: 'unknown' }]);
    expect(loc.gpus.get('0000:01:00.0')).not.toHaveProperty('numaNode');
  });

  it('gives a device without a PCI function no place and no pair, with the reason', () => {
    const sysfs = sysfsOf(spec);
    fs.mkdirSync(path.join(sysfs, 'class/infiniband/rxe0'), { recursive: true });
    const problems = new Problems();
    const loc = readLocality(sysfs, ['0000:01:00.0', '0000:02:00.0'], ['rxe0', 'mlx5_0'], problems);
    expect(loc.hcas.get('rxe0')).toEqual({ unplaced: expect.stringContaining('does not exist') });
    expect(loc.gpus.get('0000:02:00.0')).toEqual({ unplaced: expect.stringContaining('does not exist') });
    expect(loc.pairs.map((p) => `${p.gpu} ${p.hca}`)).toEqual(['0000:01:00.0 mlx5_0']);
    expect(problems.list()).toEqual([]);
  });

  it('counts a malformed numa_node and leaves the node unknown', () => {
    const sysfs = sysfsOf(spec);
    fs.writeFileSync(path.join(sysfs, 'devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node'), 'zero\n');
    const problems = new Problems();
    const loc = readLocality(sysfs, ['0000:01:00.0'], [], problems);
    expect(loc.gpus.get('0000:01:00.0')).not.toHaveProperty('numaNode');
    expect(problems.list()).toMatchObject([{ source: 'sysfs', kind: 'malformed', count: 1 }]);
  });

  it('refuses a chain that is not PCI functions below a root complex', () => {
    expect(parseChain('/s/devices/virtual/infiniband/rxe0', '/s/devices')).toMatch(/root complex/);
    expect(parseChain('/s/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0', '/s/devices')).toMatch(
      /not a PCI function/,
    );
    expect(parseChain('/elsewhere/0000:00:01.0', '/s/devices')).toMatch(/not under devices/);
  });
});

describe('relation', () => {
  const at = (rc: string, bridges: string[], numaNode?: number): PciPlace => ({
    busId: 'x',
    rootComplex: rc,
    bridges,
    ...(numaNode === undefined ? {} : { numaNode }),
  });

  it('PIX under one switch, PXB across two, PHB through the root complex', () => {
    const sw = ['rp', 'up1', 'down1'];
    expect(relation(at('pci0000:00', sw), at('pci0000:00', ['rp', 'up1', 'down2']))).toBe('PIX');
    expect(relation(at('pci0000:00', [...sw, 'up2', 'd']), at('pci0000:00', ['rp', 'up1', 'down2']))).toBe('PXB');
    expect(relation(at('pci0000:00', [...sw, 'up2', 'd']), at('pci0000:00', [...sw, 'up2', 'e']))).toBe('PIX');
    expect(relation(at('pci0000:00', sw), at('pci0000:00', ['rp2', 'up3', 'down3']))).toBe('PHB');
    expect(relation(at('pci0000:00', []), at('pci0000:00', []))).toBe('PHB');
  });

  it('NODE and SYS across root complexes by NUMA node', () => {
    expect(relation(at('pci0000:00', [], 0), at('pci0000:40', [], 0))).toBe('NODE');
    expect(relation(at('pci0000:00', [], 0), at('pci0000:80', [], 1))).toBe('SYS');
    expect(relation(at('pci0000:00', [], 0), at('pci0000:80', []))).toBe('unknown');
  });
});
