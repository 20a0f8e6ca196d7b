/**
 * The V8 flags every serving process runs with. Each way of starting `tessera serve` puts them on
 * node's command line (V8 sizes its heap when the process starts: they cannot be set later):
 * bin/tessera.js's shebang, the `start` script, the Dockerfile's CMD, deploy/tessera.service, the
 * workers of a cluster (runPrimary) and the benchmark's server; test/unit/node-flags.test.ts
 * checks each of them against this list.
 *
 * `--max-semi-space-size=4`: V8 lets the young generation grow to two 16 MB semi-spaces under
 * load, 32 MB committed of which a scavenge uses half; at 4 MB (8 MB committed) the serving
 * process's peak resident memory is lower by about 24 MB, for more frequent but shorter
 * scavenges (docs/OPERATIONS.md, "Sizing").
 *
 * `--heap-growing-percent=50`: after a full collection V8 lets the old generation grow to up to
 * four times what survived it before collecting again, when collecting is cheap against the
 * program's work (a small live heap on a machine with much memory: ours). Under sign-in and
 * refresh load, objects of requests in flight outlive the small young generation and die in the
 * old one: the old generation grew from 28 MB live to 110 MB, and the process peaked at 160–200 MB
 * resident. At 1.5 times it peaks at 128–131 MB on SQLite and 110–112 MB on PostgreSQL, for more
 * frequent full collections of a small heap (CPU per operation the same within the noise on
 * refresh grants, about 7 % more on SQLite sign-ins; docs/OPERATIONS.md, "Sizing").
 */
export const SERVE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=50'];

/** `execArgv` with any of SERVE_NODE_FLAGS it lacks added (a flag it sets otherwise is kept). */
export function withServeFlags(execArgv: readonly string[]): string[] {
  const name = (flag: string) => flag.split('=')[0]!.replaceAll('_', '-');
  const present = new Set(execArgv.map(name));
  return [...execArgv, ...SERVE_NODE_FLAGS.filter((flag) => !present.has(name(flag)))];
}
