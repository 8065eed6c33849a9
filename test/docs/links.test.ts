/**
 * Every relative link of the documentation resolves: the file exists in the repository and, with
 * a #fragment, the page has a heading GitHub gives that anchor.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { anchors, brokenLinks, githubSlug, links } from '../support/markdown-links.js';

const ROOT = path.resolve(__dirname, '../..');
const DOCS = fs
  .readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const PAGES = ['README.md', 'CONTRIBUTING.md', 'deploy/README.md', ...DOCS];

describe('documentation links', () => {
  it.each(PAGES)('every relative link and #anchor of %s resolves', (page) => {
    expect(brokenLinks(ROOT, page)).toEqual([]);
  });

  it('README.md links every page under docs/ and CONTRIBUTING.md', () => {
    const targets = new Set(links(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).map((l) => l.target));
    for (const page of [...DOCS, 'CONTRIBUTING.md']) expect([...targets], page).toContain(page);
  });
});

describe('the link checker', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-links-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (file: string, text: string): void => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };

  it('derives GitHub anchors: lower case, punctuation dropped, spaces to hyphens', () => {
    expect(githubSlug('Kernel evidence: the rdma cgroup controller')).toBe(
      'kernel-evidence-the-rdma-cgroup-controller',
    );
    expect(githubSlug("Cluster agent: Slurm's own families")).toBe('cluster-agent-slurms-own-families');
    expect(githubSlug('Per-job counters on shared ports: per-PID QP counters')).toBe(
      'per-job-counters-on-shared-ports-per-pid-qp-counters',
    );
    expect(githubSlug('`--qp-counters` and [rdma](x.md) (iproute2)')).toBe('--qp-counters-and-rdma-iproute2');
    expect(githubSlug('Metrics (node_agent) → 2.0')).toBe('metrics-node_agent--20');
  });

  it('numbers repeated headings and ignores headings in code blocks', () => {
    const a = anchors('# Tests\n\n## Tests\n\n```sh\n# not a heading\n```\n<a id="x"></a>\n');
    expect([...a].sort()).toEqual(['tests', 'tests-1', 'x']);
  });

  it('reports a missing file, a missing anchor, an escape from the repository, and nothing else', () => {
    write('docs/a.md', '# Page A\n\n## Second part\n');
    write(
      'README.md',
      [
        '# Top',
        '[ok](docs/a.md) [ok](docs/a.md#second-part) [ok](#top) [ok](docs/) [web](https://example.invalid/x)',
        '[gone](docs/b.md) [no anchor](docs/a.md#third-part) [out](../elsewhere.md)',
        '`[in code](docs/none.md)`',
        '```',
        '[in a block](docs/none.md)',
        '```',
        '[ref]: docs/missing.md',
      ].join('\n'),
    );
    expect(brokenLinks(dir, 'README.md')).toEqual([
      'README.md:3 docs/b.md: docs/b.md does not exist',
      'README.md:3 docs/a.md#third-part: docs/a.md has no #third-part',
      'README.md:3 ../elsewhere.md: points outside the repository',
      'README.md:8 docs/missing.md: docs/missing.md does not exist',
    ]);
  });
});
