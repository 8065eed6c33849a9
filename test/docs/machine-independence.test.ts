/**
 * What the repository commits from its generators (the doc tables, the alert rules, the built
 * Slurm fixtures) and what each command's --help prints are the same on every machine: run on
 * another host (a new UTS namespace, so os.hostname() really differs), in another time zone,
 * locale and TMPDIR, the generators write byte-identical files. A default read from the machine
 * must be described in words, not printed (a newcomer's `npm test` was red on its host name).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALERT_RULES_FILE } from '../../scripts/alerts.js';
import { DOC_FILES } from '../../scripts/docs-tables.js';
import { findTool, shouldRun, toolPath } from '../support/tools.js';
import { tmpDir } from '../support/tmp.js';

/** The other machine: a host name, a time zone 12:45 off UTC, a German locale, its own TMPDIR. */
const OTHER = { host: 'newcomer-laptop-7', tz: 'Pacific/Chatham', locale: 'de_DE.UTF-8' } as const;
const GENERATED_FILES = [...Object.values(DOC_FILES), ALERT_RULES_FILE];
const FIXTURES_DIR = path.join('fixtures', 'slurm', 'built');
const DIST = path.resolve('dist');
const RUN_LIMIT_MS = 60_000;

/** What the other machine looks like from inside Node, and every command's --help. */
const PROBE = `
import os from 'node:os';
import { program } from '${DIST}/src/cli/program.js';
const commands = program({}).commands;
const help = Object.fromEntries(commands.map((c) => [c.name(), c.helpInformation()]));
const nodeName = commands.find((c) => c.name() === 'node').options.find((o) => o.long === '--node-name').defaultValue;
const intl = Intl.DateTimeFormat().resolvedOptions();
process.stdout.write(JSON.stringify({ host: os.hostname(), tz: intl.timeZone, locale: intl.locale, tmp: os.tmpdir(), nodeName, help }));
`;

const unshare = findTool('unshare', 'util-linux');
const hostname = findTool('hostname', 'hostname');
const isRoot = process.geteuid?.() === 0;
if (!isRoot && !process.env.CI)
  process.stderr.write('\n!!! SKIPPING the other-host test: a new UTS namespace needs root !!!\n\n');

/** Node with `args` as the other machine: `hostname` in a new UTS namespace, then node. */
function asOtherHost(args: string[]): [string, string[]] {
  const shell = '"$0" "$1" && shift && exec "$@"';
  return [toolPath(unshare), ['--uts', 'sh', '-c', shell, toolPath(hostname), OTHER.host, process.execPath, ...args]];
}

/** Runs node with `args` in `cwd`, on this machine or (other) as the other machine; gives its stdout. */
function runNode(args: string[], cwd: string, other?: { tmp: string }): string {
  const env = other
    ? { PATH: process.env.PATH ?? '', TZ: OTHER.tz, LANG: OTHER.locale, LC_ALL: OTHER.locale, TMPDIR: other.tmp }
    : { PATH: process.env.PATH ?? '' };
  const [cmd, argv] = other ? asOtherHost(args) : [process.execPath, args];
  const r = spawnSync(cmd, argv, { cwd, env, encoding: 'utf8', timeout: RUN_LIMIT_MS });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return r.stdout;
}

interface Probe {
  host: string;
  tz: string;
  locale: string;
  tmp: string;
  /** The value --node-name takes when not given (what --help describes in words). */
  nodeName: string;
  help: object;
}

function probe(other?: { tmp: string }): Probe {
  return JSON.parse(runNode(['--input-type=module', '-e', PROBE], process.cwd(), other)) as Probe;
}

/** A copy of the pages the docs generator rewrites in place, in a scratch checkout. */
function scratchCheckout(): string {
  const dir = tmpDir('slurm-otel-other-host-');
  for (const file of GENERATED_FILES) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    if (file !== ALERT_RULES_FILE) fs.copyFileSync(file, path.join(dir, file));
  }
  return dir;
}

function filesUnder(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

describe.runIf(shouldRun(unshare) && shouldRun(hostname) && (isRoot || process.env.CI))('on another machine', () => {
  it(`runs as host ${OTHER.host}, in ${OTHER.tz}, with ${OTHER.locale} and a fresh TMPDIR, and --node-name defaults to that host (the check can fail)`, () => {
    const tmp = tmpDir('slurm-otel-other-tmp-');
    const seen = probe({ tmp });
    expect({ host: seen.host, tz: seen.tz, locale: seen.locale, tmp: seen.tmp, nodeName: seen.nodeName }).toEqual({
      host: OTHER.host,
      nodeName: OTHER.host,
      tz: OTHER.tz,
      locale: 'de-DE',
      tmp,
    });
  });

  it('every command prints the same --help as on this machine', () => {
    expect(probe({ tmp: tmpDir('slurm-otel-other-tmp-') }).help).toEqual(probe().help);
  });

  it('npm run docs writes byte-identical docs and alert rules', () => {
    const dir = scratchCheckout();
    runNode([path.join(DIST, 'scripts', 'docs.js')], dir, { tmp: tmpDir('slurm-otel-other-tmp-') });
    for (const file of GENERATED_FILES)
      expect(fs.readFileSync(path.join(dir, file), 'utf8'), file).toBe(fs.readFileSync(file, 'utf8'));
  });

  it('npm run fixtures writes byte-identical fixtures, no more, no fewer', () => {
    const dir = scratchCheckout();
    runNode([path.join(DIST, 'scripts', 'fixtures.js')], dir, { tmp: tmpDir('slurm-otel-other-tmp-') });
    const written = filesUnder(path.join(dir, FIXTURES_DIR));
    expect(written).toEqual(filesUnder(FIXTURES_DIR));
    for (const file of written)
      expect(fs.readFileSync(path.join(dir, FIXTURES_DIR, file), 'utf8'), file).toBe(
        fs.readFileSync(path.join(FIXTURES_DIR, file), 'utf8'),
      );
  });
});
