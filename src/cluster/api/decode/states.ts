/**
 * Version-independent pieces shared by the decoder families: node and job state words, exit
 * codes, CPU id lists and array-task bitmaps.
 */
import { JOB_BASE_STATES, NODE_BASE_STATES } from '../../model.js';
import type { JobExitCode, NodeBaseState, NodeState } from '../../model.js';
import { field, isRecord, noVal, num, str, strList, upperWords } from '../json/read.js';

const NODE_BASES: ReadonlySet<string> = new Set(NODE_BASE_STATES);
const JOB_BASES: ReadonlySet<string> = new Set(JOB_BASE_STATES);

/**
 * State words from any wire form: an array (v0.0.40+), a string (v0.0.36–v0.0.38, possibly
 * `IDLE+DRAIN` as scontrol prints it), or nothing.
 */
export function stateWords(v: unknown): string[] {
  if (typeof v === 'string') return v.split('+');
  return strList(v);
}

/**
 * Splits state words into base state and flags. Slurm always prints a base state (UNKNOWN is
 * the zero value and is printed too), so when none of the known bases is present the response is
 * malformed or from the future: UNKNOWN is the honest answer, and all words stay visible as flags.
 */
export function nodeState(state: unknown, stateFlags?: unknown): NodeState {
  const words = upperWords([...stateWords(state), ...strList(stateFlags)]);
  const baseIdx = words.findIndex((w) => NODE_BASES.has(w));
  if (baseIdx < 0) return { base: 'UNKNOWN', flags: words };
  const base = words[baseIdx] as NodeBaseState;
  return { base, flags: words.filter((_, i) => i !== baseIdx) };
}

/** Job state words, upper-cased, with the base state moved first if Slurm did not put it there. */
export function jobState(v: unknown): string[] {
  const words = upperWords(stateWords(v));
  const baseIdx = words.findIndex((w) => JOB_BASES.has(w));
  if (baseIdx <= 0) return words;
  const base = words[baseIdx] as string;
  return [base, ...words.filter((_, i) => i !== baseIdx)];
}

/**
 * Exit code from a raw wait(2) status, as v0.0.36–v0.0.38 slurmctld report it (768 = exit 3,
 * 15 = killed by SIGTERM).
 */
export function exitCodeFromWaitStatus(raw: number): JobExitCode {
  const signal = raw & 0x7f;
  if (signal !== 0) return { status: ['SIGNALED'], signal };
  const rc = (raw >> 8) & 0xff;
  return { status: [rc === 0 ? 'SUCCESS' : 'ERROR'], return_code: rc };
}

/**
 * Exit code in any of its forms: a raw wait status (number), or the verbose object
 * `{status, return_code, signal: {id|signal_id, name}}` where `status` is a string (dbv0.0.38)
 * or an array (v0.0.40+) and numbers may be no-val structs.
 */
export function exitCode(v: unknown): JobExitCode | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? exitCodeFromWaitStatus(v) : undefined;
  if (!isRecord(v)) return undefined;
  const status = upperWords(stateWords(v['status']));
  const rc = num(v['return_code']);
  const sig = v['signal'];
  const signal = num(field(sig, 'id')) ?? num(field(sig, 'signal_id'));
  const signalName = str(field(sig, 'name'));
  return {
    status,
    ...(rc !== undefined ? { return_code: rc } : {}),
    ...(signal !== undefined && signal > 0 ? { signal } : {}),
    ...(signalName !== undefined && signalName !== '' ? { signal_name: signalName } : {}),
  };
}

/** Number of CPUs in a Slurm CPU id list (`0-1,32`); undefined when the list is not one. */
export function cpuListCount(list: string | undefined): number | undefined {
  if (list === undefined) return undefined;
  const t = list.trim();
  if (t === '') return 0;
  let n = 0;
  for (const part of t.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (m === null) return undefined;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) return undefined;
    n += hi - lo + 1;
  }
  return n;
}

/**
 * slurmdbd stores the tasks of a pending array record as a hex bitmap and dbv0.0.38 returns it
 * as is (`0xF0` = tasks 4–7). Renders such a bitmap as a range expression (`4-7`); anything that
 * is not a hex bitmap is returned unchanged.
 */
export function arrayTaskExpression(task: string): string {
  const m = /^0x([0-9a-f]+)$/i.exec(task.trim());
  if (m === null) return task;
  const hex = m[1] as string;
  const ranges: string[] = [];
  let runStart = -1;
  const bits = hex.length * 4;
  for (let bit = 0; bit <= bits; bit++) {
    const set = bit < bits && bitSet(hex, bit);
    if (set && runStart < 0) runStart = bit;
    if (!set && runStart >= 0) {
      ranges.push(runStart === bit - 1 ? String(runStart) : `${runStart}-${bit - 1}`);
      runStart = -1;
    }
  }
  return ranges.join(',');
}

function bitSet(hex: string, bit: number): boolean {
  const digit = parseInt(hex[hex.length - 1 - (bit >> 2)] as string, 16);
  return ((digit >> (bit & 3)) & 1) === 1;
}

/** A time limit in minutes, with INFINITE kept apart from "unset". */
export function timeLimit(v: unknown): { time_limit?: number; time_limit_unlimited?: boolean } {
  const r = noVal(v, { u32: true });
  if (r.kind === 'infinite') return { time_limit_unlimited: true };
  if (r.kind === 'number') return { time_limit: r.value };
  return {};
}

/** `None assigned` / `(null)` are slurmdbd's words for "no node yet", not host names. */
export function nodeListString(v: unknown): string {
  const s = str(v)?.trim() ?? '';
  return s === 'None assigned' || s === '(null)' ? '' : s;
}

/** A string field, dropping empties: Slurm sends "" and null alike for "not set". */
export function text(v: unknown): string | undefined {
  const s = str(v);
  return s === undefined || s === '' ? undefined : s;
}
