/**
 * Parity with node_exporter and prometheus/procfs on the InfiniBand sysfs trees their own
 * tests use (fixtures/sysfs/*.json: each tree's files and the values those projects expect from
 * it): every value they state for counters/, hw_counters/ and counters_ext/, both bytes
 * families, port state, physical state, rate and identity must come out of the agent's
 * exposition unchanged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNodeOnce } from '../../../src/node/agent.js';
import { nodeAgentOptions } from '../../support/agents.js';
import { parseExposition, select, type Sample } from '../../support/exposition.js';
import { tmpDir } from '../../support/tmp.js';

const FIXTURES = path.resolve('fixtures/sysfs');

/** node_exporter series (after `node_infiniband_`) → the sysfs counter file it reads, and its scale. */
const COUNTERS: Readonly<Record<string, { file: string; scale?: number }>> = {
  excessive_buffer_overrun_errors_total: { file: 'excessive_buffer_overrun_errors' },
  link_downed_total: { file: 'link_downed' },
  link_error_recovery_total: { file: 'link_error_recovery' },
  local_link_integrity_errors_total: { file: 'local_link_integrity_errors' },
  multicast_packets_received_total: { file: 'multicast_rcv_packets' },
  multicast_packets_transmitted_total: { file: 'multicast_xmit_packets' },
  port_constraint_errors_received_total: { file: 'port_rcv_constraint_errors' },
  port_constraint_errors_transmitted_total: { file: 'port_xmit_constraint_errors' },
  port_data_received_bytes_total: { file: 'port_rcv_data', scale: 4 },
  port_data_transmitted_bytes_total: { file: 'port_xmit_data', scale: 4 },
  port_discards_received_total: { file: 'port_rcv_discards' },
  port_discards_transmitted_total: { file: 'port_xmit_discards' },
  port_errors_received_total: { file: 'port_rcv_errors' },
  port_packets_received_total: { file: 'port_rcv_packets' },
  port_packets_transmitted_total: { file: 'port_xmit_packets' },
  port_transmit_wait_total: { file: 'port_xmit_wait' },
  unicast_packets_received_total: { file: 'unicast_rcv_packets' },
  unicast_packets_transmitted_total: { file: 'unicast_xmit_packets' },
  port_receive_remote_physical_errors_total: { file: 'port_rcv_remote_physical_errors' },
  port_receive_switch_relay_errors_total: { file: 'port_rcv_switch_relay_errors' },
  symbol_error_total: { file: 'symbol_error' },
  vl15_dropped_total: { file: 'VL15_dropped' },
  // counters_ext/ (kernels before 4.5)
  legacy_multicast_packets_received_total: { file: 'port_multicast_rcv_packets' },
  legacy_multicast_packets_transmitted_total: { file: 'port_multicast_xmit_packets' },
  legacy_data_received_bytes_total: { file: 'port_rcv_data_64', scale: 4 },
  legacy_packets_received_total: { file: 'port_rcv_packets_64' },
  legacy_unicast_packets_received_total: { file: 'port_unicast_rcv_packets' },
  legacy_unicast_packets_transmitted_total: { file: 'port_unicast_xmit_packets' },
  legacy_data_transmitted_bytes_total: { file: 'port_xmit_data_64', scale: 4 },
  legacy_packets_transmitted_total: { file: 'port_xmit_packets_64' },
  // hw_counters/
  duplicate_requests_packets_total: { file: 'duplicate_request' },
  implied_nak_seq_errors_total: { file: 'implied_nak_seq_err' },
  local_ack_timeout_errors_total: { file: 'local_ack_timeout_err' },
  np_cnp_packets_sent_total: { file: 'np_cnp_sent' },
  np_ecn_marked_roce_packets_received_total: { file: 'np_ecn_marked_roce_packets' },
  out_of_buffer_drops_total: { file: 'out_of_buffer' },
  out_of_sequence_packets_received_total: { file: 'out_of_sequence' },
  packet_sequence_errors_total: { file: 'packet_seq_err' },
  req_cqes_errors_total: { file: 'req_cqe_error' },
  req_cqes_flush_errors_total: { file: 'req_cqe_flush_error' },
  req_remote_access_errors_total: { file: 'req_remote_access_errors' },
  req_remote_invalid_request_errors_total: { file: 'req_remote_invalid_request' },
  resp_cqes_errors_total: { file: 'resp_cqe_error' },
  resp_cqes_flush_errors_total: { file: 'resp_cqe_flush_error' },
  resp_local_length_errors_total: { file: 'resp_local_length_error' },
  resp_remote_access_errors_total: { file: 'resp_remote_access_errors' },
  rnr_nak_retry_packets_received_total: { file: 'rnr_nak_retry_err' },
  roce_adp_retransmits_total: { file: 'roce_adp_retrans' },
  roce_adp_retransmits_timeout_total: { file: 'roce_adp_retrans_to' },
  roce_slow_restart_used_total: { file: 'roce_slow_restart' },
  roce_slow_restart_cnps_total: { file: 'roce_slow_restart_cnps' },
  roce_slow_restart_total: { file: 'roce_slow_restart_trans' },
  rp_cnp_packets_handled_total: { file: 'rp_cnp_handled' },
  rp_cnp_ignored_packets_received_total: { file: 'rp_cnp_ignored' },
  rx_atomic_requests_total: { file: 'rx_atomic_requests' },
  rx_dct_connect_requests_total: { file: 'rx_dct_connect' },
  rx_read_requests_total: { file: 'rx_read_requests' },
  rx_write_requests_total: { file: 'rx_write_requests' },
  rx_icrc_encapsulated_errors_total: { file: 'rx_icrc_encapsulated' },
};

/** node_exporter port gauges → the agent's family. */
const GAUGES: Readonly<Record<string, string>> = {
  state_id: 'ib_slurm_device_port_state',
  physical_state_id: 'ib_slurm_device_port_physical_state',
  rate_bytes_per_second: 'ib_slurm_device_port_rate_bytes_per_second',
};

/** The bytes families, checked besides the raw counter × 4. */
const BYTES: Readonly<Record<string, string>> = {
  port_data_received_bytes_total: 'ib_slurm_device_receive_bytes_total',
  port_data_transmitted_bytes_total: 'ib_slurm_device_transmit_bytes_total',
};

/** A directory tree as plain data: an object is a directory, a string a file's content. */
interface Tree {
  readonly [name: string]: Tree | string;
}

interface Fixture {
  readonly infiniband: Tree;
  /** node_exporter's series names without `node_infiniband_`. */
  readonly expected: readonly {
    readonly series: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly value: number;
  }[];
}

function load(file: string): Fixture {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as Fixture;
}

function writeTree(dir: string, tree: Tree): number {
  fs.mkdirSync(dir, { recursive: true });
  let files = 0;
  for (const [name, v] of Object.entries(tree)) {
    if (typeof v === 'string') {
      fs.writeFileSync(path.join(dir, name), v);
      files++;
    } else files += writeTree(path.join(dir, name), v);
  }
  return files;
}

async function agentExposition(f: Fixture): Promise<Sample[]> {
  const dir = tmpDir();
  expect(writeTree(path.join(dir, 'sys', 'class', 'infiniband'), f.infiniband)).toBeGreaterThan(50);
  for (const d of ['proc', 'cgroup']) fs.mkdirSync(path.join(dir, d));
  const roots = { sysfs: path.join(dir, 'sys'), procfs: path.join(dir, 'proc'), cgroupfs: path.join(dir, 'cgroup') };
  return parseExposition((await runNodeOnce(nodeAgentOptions(roots))).text);
}

function oracle(f: Fixture): Sample[] {
  return f.expected.map((e) => ({ name: `node_infiniband_${e.series}`, labels: e.labels, value: e.value }));
}

function one(samples: readonly Sample[], name: string, match: Record<string, string>): number | undefined {
  const found = select(samples, name, match);
  expect(found.length, `${name} ${JSON.stringify(match)}`).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

/** Compares every expected sample with the agent's; returns how many values were compared. */
function compare(expected: readonly Sample[], ours: readonly Sample[]): number {
  let compared = 0;
  for (const e of expected) {
    const key = e.name.slice('node_infiniband_'.length);
    const where = `${key} ${JSON.stringify(e.labels)}`;
    const dp = { device: e.labels.device as string, port: e.labels.port as string };
    if (key === 'info') {
      expect(one(ours, 'ib_slurm_device_info', e.labels), where).toBe(1);
    } else if (key in GAUGES) {
      expect(one(ours, GAUGES[key] as string, dp), where).toBe(e.value);
    } else {
      const c = COUNTERS[key];
      expect(c, `no mapping for ${key}`).toBeDefined();
      const raw = one(ours, 'ib_slurm_device_counters_total', { ...dp, counter: c?.file ?? '' });
      expect(raw === undefined ? undefined : raw * (c?.scale ?? 1), where).toBe(e.value);
      if (key in BYTES) {
        expect(one(ours, BYTES[key] as string, dp), where).toBe(e.value);
        compared++;
      }
    }
    compared++;
  }
  return compared;
}

/** Nothing the agent exports from a file the oracle knows is missing from the oracle. */
function nothingExtra(expected: readonly Sample[], ours: readonly Sample[]): void {
  const known = new Map(Object.entries(COUNTERS).map(([k, v]) => [v.file, k]));
  for (const s of select(ours, 'ib_slurm_device_counters_total')) {
    const key = known.get(s.labels.counter as string);
    if (key === undefined) continue;
    expect(
      one(expected, `node_infiniband_${key}`, { device: s.labels.device as string, port: s.labels.port as string }),
      `${key} ${JSON.stringify(s.labels)}`,
    ).toBeDefined();
  }
  for (const [key, family] of Object.entries(BYTES))
    expect(select(ours, family).length, family).toBe(select(expected, `node_infiniband_${key}`).length);
}

describe('InfiniBand parity with node_exporter and procfs fixtures', () => {
  it("matches node_exporter's expected output on its sysfs tree (counters_ext never replaces counters/)", async () => {
    const fixture = load('node_exporter-infiniband.json');
    const ours = await agentExposition(fixture);
    const expected = oracle(fixture).filter((s) => s.name !== 'node_infiniband_lifespan_seconds');
    expect(compare(expected, ours)).toBe(expected.length + 4);
    nothingExtra(expected, ours);
    // The mlx4 port where counters_ext/port_rcv_packets_64 reads 0 beside counters/port_rcv_packets.
    expect(
      one(ours, 'ib_slurm_device_counters_total', { device: 'mlx4_0', port: '1', counter: 'port_rcv_packets' }),
    ).toBe(6825908347);
    expect(
      one(ours, 'ib_slurm_device_counters_total', { device: 'mlx4_0', port: '1', counter: 'port_rcv_packets_64' }),
    ).toBe(0);
  });

  it("matches the values procfs's own test states for its sysfs tree", async () => {
    const fixture = load('procfs-infiniband.json');
    const ours = await agentExposition(fixture);
    const expected = oracle(fixture);
    expect(compare(expected, ours)).toBe(expected.length + 8);
    nothingExtra(expected, ours);
  });
});
