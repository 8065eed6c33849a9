/**
 * The V8 limits the single executable sets on itself (its SEA config's execArgv). They are the
 * executable's own: NODE_OPTIONS is ignored there, so neither a unit's Environment= nor a user's
 * shell changes them. Chosen from bench/daemon.ts on the benches' heavy node and the 100k-job
 * cluster; deploy/README.md gives the figures. They hold for both agents; a flag for one agent
 * alone is set by that agent once started (src/cli/v8-tuning.ts).
 *
 * Young generation: Node 24's V8 lets each semi-space grow to 32 MiB (Node 20's: 16 MiB), and
 * the young generation holds three of them (two semi-spaces and the space for large new objects)
 * once grown. A node agent's cycle makes a few MiB of short-lived objects at a time, so those
 * spaces fill, grow and stay resident: 126 MiB peak RSS against Node 20's 108 MiB. Capped at
 * SEMI_SPACE_MIB, scavenges run more often but each is shorter, and the cycle's garbage still
 * dies young.
 *
 * Old generation: V8 sizes it from the machine's memory (over 4 GiB on a 24 GiB machine), so a
 * cluster agent's heap would grow with the host rather than with the cluster. OLD_SPACE_MIB caps it:
 * V8 then collects harder as the heap nears the cap, and if live data alone would exceed it, V8
 * prints "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory" and
 * aborts (SIGABRT, exit status 134), which the units' Restart=on-failure restart after RestartSec.
 */

/** Largest semi-space, in MiB (V8's --max-semi-space-size). */
export const SEMI_SPACE_MIB = 2;
/** Largest old generation, in MiB (V8's --max-old-space-size). */
export const OLD_SPACE_MIB = 384;

/** The flags, as the SEA config's execArgv takes them. */
export const V8_FLAGS: readonly string[] = [
  `--max-semi-space-size=${SEMI_SPACE_MIB}`,
  `--max-old-space-size=${OLD_SPACE_MIB}`,
];
