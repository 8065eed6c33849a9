/** A real Prometheus (Debian package) on loopback, scraping the given targets. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, stopChild, waitFor } from './tools.js';

export interface PrometheusServer {
  readonly url: string;
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Polls until the query returns data (generous default deadline: 60 s). */
  waitFor(expr: string, timeoutMs?: number): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  stop(): Promise<void>;
}

/**
 * `ruleFiles`: rule files to load (absolute paths), evaluated every second like the scrapes.
 * `extraArgs`: more command-line flags (e.g. `--web.enable-remote-write-receiver`).
 * `honorLabels`: the jobs scraped with `honor_labels: true` (the targets' job/instance win).
 * `outOfOrderWindow`: storage.tsdb.out_of_order_time_window (late samples accepted within it).
 */
/** A scrape target with the labels its static config gives it (an `instance` label replaces host:port). */
export interface LabelledTarget {
  readonly target: string;
  readonly labels: Readonly<Record<string, string>>;
}

function staticConfigs(targets: readonly (string | LabelledTarget)[]): string {
  const plain = targets.filter((t): t is string => typeof t === 'string');
  const groups = plain.length > 0 ? [`      - targets: [${plain.map((t) => `'${t}'`).join(', ')}]`] : [];
  for (const t of targets) {
    if (typeof t === 'string') continue;
    const labels = Object.entries(t.labels).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
    groups.push(`      - targets: ['${t.target}']\n        labels: {${labels.join(', ')}}`);
  }
  return groups.join('\n');
}

export async function startPrometheus(
  binary: string,
  dir: string,
  jobs: Record<string, readonly (string | LabelledTarget)[]>,
  ruleFiles: readonly string[] = [],
  extraArgs: readonly string[] = [],
  honorLabels: readonly string[] = [],
  outOfOrderWindow?: string,
  /** Per job, a file whose token the scrapes present as `Authorization: Bearer`. */
  bearerFiles: Readonly<Record<string, string>> = {},
): Promise<PrometheusServer> {
  const port = await freePort();
  const bearer = (job: string): string =>
    bearerFiles[job] ? `    authorization:\n      credentials_file: '${bearerFiles[job]}'\n` : '';
  const scrape = Object.entries(jobs)
    .map(
      ([job, targets]) =>
        `  - job_name: ${job}\n    scrape_interval: 1s\n${honorLabels.includes(job) ? '    honor_labels: true\n' : ''}${bearer(job)}    static_configs:\n${staticConfigs(targets)}`,
    )
    .join('\n');
  const config = path.join(dir, 'prometheus.yml');
  const storage = outOfOrderWindow ? `storage:\n  tsdb:\n    out_of_order_time_window: ${outOfOrderWindow}\n` : '';
  const rules = ruleFiles.length > 0 ? `rule_files:\n${ruleFiles.map((f) => `  - '${f}'`).join('\n')}\n` : '';
  fs.writeFileSync(
    config,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${storage}${rules}${scrape ? `scrape_configs:\n${scrape}\n` : ''}`,
  );
  const child: ChildProcess = spawn(
    binary,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      ...extraArgs,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const query = async (expr: string) => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as {
      status: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
      error?: string;
    };
    if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error}`);
    return body.data?.result ?? [];
  };
  const rows = (expr: string, timeoutMs = 60_000) =>
    waitFor(
      `data for ${expr}`,
      async () => {
        if (child.exitCode !== null) return { exited: child.exitCode };
        const r = await query(expr);
        return r.length > 0 ? { rows: r } : undefined;
      },
      timeoutMs,
    ).then(
      (got) => {
        if ('exited' in got) throw new Error(`prometheus exited (${got.exited}):\n${log}`);
        return got.rows;
      },
      (err: Error) => {
        throw new Error(`${err.message}; prometheus log tail:\n${log}`);
      },
    );
  return { url, query, waitFor: rows, stop: () => stopChild(child) };
}
