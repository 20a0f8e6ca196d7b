// `npm run bench:side-by-side`: /verify with never-seen tokens on three Tessera servers of the same
// code and database, one that signed users in first and two that did not, and on three hand-written
// verifiers (as in `npm run bench`, answered on node:http ahead of Fastify, and with Tessera's
// modules loaded), all six loaded at once. See bench/README.md ("Side by side"). Prints; writes
// nothing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllChildren, startChild } from './children.js';
import { cpuPerOp, type LoadResult, warmUp, window } from './load.js';
import { verifyEach } from './phases.js';
import { signInMany, verifyBodyMinter } from './prepare.js';
import { median } from './report.js';
import { envNumber, readSettings } from './settings.js';
import { startTessera } from './tessera.js';

const env = process.env;
const signIns = envNumber(env, 'SIDE_SIGN_INS', 2000, { min: 1, max: 100_000, whole: true });
// At most 60: the never-seen tokens are minted ahead and kept, about 9,000 a window.
const windows = envNumber(env, 'SIDE_WINDOWS', 14, { min: 3, max: 60, whole: true });
const seconds = envNumber(env, 'SIDE_SECONDS', 3, { min: 1, max: 60, whole: true });
/** Connections per server. */
const connections = 12;

const two = (n: number) => n.toFixed(3);

/**
 * The servers on CPU 0 and this process (the load generator) on CPU 1, threads included, so
 * the servers share one core evenly and none waits on the generator; false where that cannot be.
 */
function pin(pids: number[]): boolean {
  if (availableParallelism() < 2) return false;
  try {
    for (const pid of pids) execFileSync('taskset', ['-a', '-cp', '0', String(pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tessera-side-'));
process.once('exit', () => {
  killAllChildren();
  rmSync(dir, { recursive: true, force: true });
});

// BENCH_SERVER_NODE_ARGS: extra Node flags for both Tessera children, as in `npm run bench`.
const nodeArgs = readSettings().serverNodeArgs;
const served = await startTessera({ dialect: 'sqlite', dir, nodeArgs });
const fresh = await startTessera({ dialect: 'sqlite', dir, nodeArgs, join: served });
// A second process exactly like `fresh`: what two identical processes differ by (A/A).
const twin = await startTessera({ dialect: 'sqlite', dir, nodeArgs, join: served });
const url = served.server.ready.url;
const apiKeyId = served.server.ready.apiKeyId!;
const sessions = await signInMany(url, apiKeyId, signIns, 'side');
const jwks = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as {
  keys: Array<Record<string, unknown>>;
};
const first = sessions[0]!.accessToken;
const kid = (JSON.parse(Buffer.from(first.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;
const jwk = jwks.keys.find((k) => k.kid === kid);
if (!jwk) throw new Error('the token kid is not in the JWKS');
const verifier = (name: string, variant: Record<string, string> = {}) =>
  startChild(name, new URL('./verifier-entry.ts', import.meta.url), {
    BENCH_VERIFIER_JWK: JSON.stringify(jwk),
    BENCH_VERIFIER_ISSUER: url,
    ...variant,
  });
const handwritten = await verifier('hand-written verifier');
// The same check answered ahead of Fastify's pipeline, as Tessera's fast path answers /verify.
const raw = await verifier('hand-written verifier on node:http', { BENCH_VERIFIER_RAW: '1' });
// The hand-written verifier with Tessera's server modules imported and left unused.
const loaded = await verifier('hand-written verifier, Tessera loaded', { BENCH_VERIFIER_LOAD_TESSERA: '1' });
const verifiers = [handwritten, raw, loaded];
const pinned = pin(
  [served, fresh, twin].map((t) => t.server.process.pid!).concat(verifiers.map((v) => v.process.pid!)),
);
console.log(
  `${signIns} users signed in by OTP on "served"; "fresh" and its twin share its database and have served nothing; ` +
    `${pinned ? 'servers pinned to CPU 0, load generator to CPU 1' : 'not pinned (taskset or a second core missing)'}`,
);

const mint = await verifyBodyMinter(
  served.databaseUrl,
  served.masterKey,
  sessions.map((s) => s.accessToken),
);
// The same never-seen tokens go to all six, each server taking them in order on its own.
const bodies: Buffer[] = [];
const loads = {
  served: { ...verifyEach(url, apiKeyId, bodies), server: served.server },
  fresh: { ...verifyEach(fresh.server.ready.url, apiKeyId, bodies), server: fresh.server },
  twin: { ...verifyEach(twin.server.ready.url, apiKeyId, bodies), server: twin.server },
  handwritten: { ...verifyEach(handwritten.ready.url, apiKeyId, bodies), server: handwritten },
  raw: { ...verifyEach(raw.ready.url, apiKeyId, bodies), server: raw },
  loaded: { ...verifyEach(loaded.ready.url, apiKeyId, bodies), server: loaded },
};
const topUp = () => {
  const used = Math.max(...Object.values(loads).map((l) => l.used()));
  const needed = 8000 * seconds + 2000 - (bodies.length - used);
  if (needed > 0) for (const body of mint(needed)) bodies.push(body);
};
topUp();
await Promise.all(Object.values(loads).map((l) => warmUp(l, connections, 2)));

/** CPU per request of one server over another's, window by window (above 1: the first spends more). */
const pairs = {
  'hand-written ÷ served': ['handwritten', 'served'],
  'hand-written ÷ fresh': ['handwritten', 'fresh'],
  'served ÷ fresh': ['served', 'fresh'],
  'twin ÷ fresh (identical processes)': ['twin', 'fresh'],
  'on node:http ÷ hand-written (what Fastify costs it)': ['raw', 'handwritten'],
  'Tessera loaded ÷ hand-written (what loaded code costs it)': ['loaded', 'handwritten'],
} as const;
const ratios = new Map<string, number[]>(Object.keys(pairs).map((name) => [name, []]));
for (let i = 0; i < windows; i++) {
  topUp();
  const names = Object.keys(loads) as Array<keyof typeof loads>;
  const results = await Promise.all(names.map((name) => window(loads[name], connections, seconds)));
  const cpu = {} as Record<keyof typeof loads, number>;
  results.forEach((r: LoadResult, k) => {
    if (r.failed > 0 || r.errors > 0)
      throw new Error(`a window had ${r.failed} refusals, ${r.errors} errors (${names[k]})`);
    cpu[names[k]!] = cpuPerOp(r);
  });
  for (const [name, [a, b]] of Object.entries(pairs)) ratios.get(name)!.push(cpu[a] / cpu[b]);
  console.log(
    `window ${i + 1}: µs of CPU a request: ${names.map((name) => `${name} ${cpu[name].toFixed(1)}`).join(', ')}`,
  );
}
console.log(
  `medians of ${windows} windows of ${seconds} s (CPU a request, lower is faster):\n` +
    [...ratios].map(([name, values]) => `  ${name} ${two(median(values))}`).join('\n'),
);
await Promise.all([fresh.close(), twin.close(), ...verifiers.map((v) => v.stop())]);
await served.close();
process.exit(0);
