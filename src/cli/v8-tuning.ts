/**
 * V8 flags an agent sets on itself once it knows which agent it is. The single executable's own
 * flags (scripts/sea/v8-flags.ts) are fixed when it is built and hold for both agents; these are
 * set by the running program, so they differ between the agents, and hold on whatever Node runs
 * it (the executable's, or the one an npm install runs on).
 *
 * Node agent: `--optimize-for-size`. V8 then grows its heap by smaller steps and collects the old
 * generation more often (12 full collections in 8 cycles on the benches' heavy node, against 3),
 * returning what it freed. The agent's heap holds little that lives long: on that node at the
 * default intervals the executable without the flag crept up to a 97 MiB peak RSS (102 MB) in 40
 * minutes, over the 100 MB the node agent is held to; with it, it stayed at 88 MiB for an hour,
 * its anonymous pages at 31 MiB instead of 43. The price is about 10 CPU seconds an hour (70
 * against 59), a longer longest stall (103 ms against 68 over that hour) and about 0.04× on the
 * steady cycle's ratio to its floor (docs/benchmarks.md has the runs).
 *
 * Cluster agent: none. The same flag built into the executable doubled the CPU of a 100,000-job
 * collection and its longest stall, for no saving there.
 *
 * Node says that flags changed after start may do nothing or behave unpredictably. This one is read
 * by V8 as it goes (when it sizes the heap, when it compiles), and did what it is set for in every
 * run above; the node agent's tests run with it, and the start-up log line names it.
 */
import v8 from 'node:v8';

/** What the node agent sets on itself (in the start-up log as `v8_flags`). */
export const NODE_AGENT_V8_FLAGS: readonly string[] = ['--optimize-for-size'];

/** Sets `flags` on the running V8; returns them, for the start-up log. */
export function setV8Flags(flags: readonly string[]): readonly string[] {
  if (flags.length > 0) v8.setFlagsFromString(flags.join(' '));
  return flags;
}
