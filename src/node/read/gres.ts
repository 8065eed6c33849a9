/**
 * Slurm's own word on which GPUs each job was given on this node, parsed (no I/O here; the runner
 * is gres-source.ts). Two pieces, both measured on Slurm 22.05 and 26.05 (fixtures/node/slurm-gres):
 *
 * - `slurmd -G -N <node>`: the node's GRES as slurmd configured them, one `Gres Name=gpu … File=…`
 *   line per gres.conf line (a File= range such as `nvidia[0-3]` stays one line). A job's GRES index
 *   is the position of its device in this list, File= ranges expanded in order: it is NOT the
 *   `Index=` field slurmd prints (for File=…/nvidia3 that field says 3 while jobs call it IDX:0),
 *   nor the device minor, nor nvidia-smi's index, nor CUDA's ordinal.
 * - `scontrol show job -d <id>`: per job, one `Nodes=<host list> CPU_IDs=… GRES=<detail>` line per
 *   group of its nodes, the detail as `gpu:tesla:2(IDX:0-1)`: this node's indices come from the line
 *   whose host list names it. (`squeue --json` gives the same `gres_detail`, but Slurm 22.05 lists
 *   every job of the cluster whatever --nodelist says: far too much to ask from every node.)
 */

/** The GPU device files of this node's GRES, in Slurm's index order; or why they cannot be known. */
export function parseSlurmdGpuFiles(text: string): { files: string[] } | { why: string } {
  const files: string[] = [];
  for (const line of text.split('\n')) {
    const m = /\bGres Name=(\S+) .*?\bFile=(\S+)/.exec(line);
    if (!m || m[1] !== 'gpu') continue;
    const expanded = expandRange(m[2] as string);
    if (expanded === undefined) return { why: `slurmd -G: File=${m[2]} is not a plain list Slurm numbers in order` };
    files.push(...expanded);
  }
  if (files.length === 0 && /\bGres Name=gpu\b/.test(text)) return { why: 'slurmd -G: GPU GRES without File=' };
  return { files };
}

/**
 * `/dev/nvidia[0-3]` → its paths, in order. Only ascending brackets are accepted: their order is
 * the one Slurm was seen to number; a descending or repeated list is left unknown rather than guessed.
 */
export function expandRange(spec: string): string[] | undefined {
  const m = /^([^[\]]*)\[([0-9,-]+)\]([^[\]]*)$/.exec(spec);
  if (!m) return /[[\]]/.test(spec) ? undefined : [spec];
  const nums = parseNumberList(m[2] as string, 1024);
  if (nums === undefined || nums.some((n, i) => i > 0 && n <= (nums[i - 1] as number))) return undefined;
  return nums.map((n) => `${m[1]}${padded(n, m[2] as string)}${m[3]}`);
}

/** A number as a bracket body writes it: `[01-04]` keeps two digits. */
function padded(n: number, body: string): string {
  const width = Math.max(0, ...body.split(/[,-]/).map((s) => (s.length > 1 && s.startsWith('0') ? s.length : 0)));
  return String(n).padStart(width, '0');
}

/** `0-1,3` → [0, 1, 3]; undefined when malformed or longer than `max`. */
export function parseNumberList(text: string, max: number): number[] | undefined {
  const out: number[] = [];
  for (const part of text.split(',')) {
    const r = /^(\d{1,6})(?:-(\d{1,6}))?$/.exec(part);
    if (!r) return undefined;
    const lo = Number(r[1]);
    const hi = r[2] === undefined ? lo : Number(r[2]);
    if (hi < lo || out.length + hi - lo + 1 > max) return undefined;
    for (let n = lo; n <= hi; n++) out.push(n);
  }
  return out;
}

/** The node names of a Slurm host list (`a[1-3],b7`, `r[1-2]n[01-04]`), at most `max`; undefined when malformed. */
export function expandHostlist(expr: string, max = 65536): string[] | undefined {
  const out: string[] = [];
  for (const item of splitTopLevel(expr)) {
    const names = expandHost(item, max - out.length);
    if (names === undefined) return undefined;
    out.push(...names);
  }
  return out;
}

/** Splits at commas outside brackets. */
function splitTopLevel(expr: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < expr.length; i++) {
    if (expr[i] === '[') depth++;
    else if (expr[i] === ']') depth--;
    else if (expr[i] === ',' && depth === 0) {
      out.push(expr.slice(start, i));
      start = i + 1;
    }
  }
  out.push(expr.slice(start));
  return out.filter((s) => s !== '');
}

function expandHost(item: string, max: number): string[] | undefined {
  const m = /^([^[\]]*)\[([0-9,-]+)\](.*)$/.exec(item);
  if (!m) return /[[\]]/.test(item) ? undefined : [item];
  const body = m[2] as string;
  const nums = parseNumberList(body, max);
  const rest = expandHost(m[3] as string, max);
  if (nums === undefined || rest === undefined || nums.length * rest.length > max) return undefined;
  return nums.flatMap((n) => rest.map((r) => `${m[1]}${padded(n, body)}${r}`));
}

/**
 * A job's GPU GRES indices on `nodeName` from `scontrol show job -d`: [] when the job has no GPU
 * there, undefined when the output names the node in no `Nodes=` line (or is malformed).
 */
export function parseScontrolGpuIndices(text: string, nodeName: string): number[] | undefined {
  for (const line of text.split('\n')) {
    const m = /^\s+Nodes=(\S+) .*?\bGRES=(\S*)/.exec(line);
    if (!m || !(expandHostlist(m[1] as string) ?? []).includes(nodeName)) continue;
    return gpuIndices(m[2] as string);
  }
  // A job whose nodes have no GRES line (no -d detail) has none on any node, if scontrol said it has none.
  return /^\s*JOB_GRES=\(null\)\s*$/m.test(text) && /\bNodeList=/.test(text) ? [] : undefined;
}

/** `gpu:tesla:2(IDX:0-1),gpu:a100:1(IDX:3)` → [0, 1, 3]; undefined when an IDX list is malformed. */
export function gpuIndices(detail: string): number[] | undefined {
  const out: number[] = [];
  for (const m of detail.matchAll(/(?:^|,)gpu(?::[^(,]*)?\(IDX:([^)]*)\)/g)) {
    if (m[1] === 'N/A') continue;
    const nums = parseNumberList(m[1] as string, 1024);
    if (nums === undefined) return undefined;
    out.push(...nums);
  }
  return out;
}
