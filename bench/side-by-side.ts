// `npm run bench:side-by-side`: /verify with never-seen tokens on three Tessera servers of the same
// code and database, one that signed users in first and two that did not, and on the hand-written
// verifier, all four loaded at once. See bench/README.md ("Side by side"). Prints; writes nothing.
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
const connections = 17;

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
const handwritten = await startChild(
  'hand-written verifier',
  new URL('./verifier-entry.ts', import.meta.url),
  {
    BENCH_VERIFIER_JWK: JSON.stringify(jwk),
    BENCH_VERIFIER_ISSUER: url,
  },
);
const pinned = pin([served, fresh, twin].map((t) => t.server.process.pid!).concat(handwritten.process.pid!));
console.log(
  `${signIns} users signed in by OTP on "served"; "fresh" and its twin share its database and have served nothing; ` +
    `${pinned ? 'servers pinned to CPU 0, load generator to CPU 1' : 'not pinned (taskset or a second core missing)'}`,
);

const mint = await verifyBodyMinter(
  served.databaseUrl,
  served.masterKey,
  sessions.map((s) => s.accessToken),
);
// The same never-seen tokens go to all three, each server taking them in order on its own.
const bodies: Buffer[] = [];
const loads = {
  served: { ...verifyEach(url, apiKeyId, bodies), server: served.server },
  fresh: { ...verifyEach(fresh.server.ready.url, apiKeyId, bodies), server: fresh.server },
  twin: { ...verifyEach(twin.server.ready.url, apiKeyId, bodies), server: twin.server },
  handwritten: { ...verifyEach(handwritten.ready.url, apiKeyId, bodies), server: handwritten },
};
const topUp = () => {
  const used = Math.max(...Object.values(loads).map((l) => l.used()));
  const needed = 8000 * seconds + 2000 - (bodies.length - used);
  if (needed > 0) for (const body of mint(needed)) bodies.push(body);
};
topUp();
await Promise.all(Object.values(loads).map((l) => warmUp(l, connections, 2)));

const ratios = {
  handwrittenServed: [] as number[],
  handwrittenFresh: [] as number[],
  servedFresh: [] as number[],
  twinFresh: [] as number[],
};
for (let i = 0; i < windows; i++) {
  topUp();
  const [s, f, t, h] = (await Promise.all(
    [loads.served, loads.fresh, loads.twin, loads.handwritten].map((l) => window(l, connections, seconds)),
  )) as [LoadResult, LoadResult, LoadResult, LoadResult];
  for (const r of [s, f, t, h])
    if (r.failed > 0 || r.errors > 0)
      throw new Error(`a window had ${r.failed} refusals, ${r.errors} errors`);
  ratios.handwrittenServed.push(cpuPerOp(h) / cpuPerOp(s));
  ratios.handwrittenFresh.push(cpuPerOp(h) / cpuPerOp(f));
  ratios.servedFresh.push(cpuPerOp(s) / cpuPerOp(f));
  ratios.twinFresh.push(cpuPerOp(t) / cpuPerOp(f));
  console.log(
    `window ${i + 1}: µs of CPU a request: served ${cpuPerOp(s).toFixed(1)}, fresh ${cpuPerOp(f).toFixed(1)}, ` +
      `twin ${cpuPerOp(t).toFixed(1)}, ` +
      `hand-written ${cpuPerOp(h).toFixed(1)}`,
  );
}
console.log(
  `medians of ${windows} windows of ${seconds} s (CPU a request, lower is faster): ` +
    `hand-written ÷ served ${two(median(ratios.handwrittenServed))}, ` +
    `hand-written ÷ fresh ${two(median(ratios.handwrittenFresh))}, ` +
    `served ÷ fresh ${two(median(ratios.servedFresh))}, ` +
    `twin ÷ fresh ${two(median(ratios.twinFresh))} (identical processes)`,
);
await Promise.all([fresh.close(), twin.close(), handwritten.stop()]);
await served.close();
process.exit(0);
