// `npm run bench`: Tessera's throughput against a bare Fastify baseline and raw ES256
// verification, measured in one run; writes docs/BENCHMARKS.md. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Child, killAllChildren, startChild } from './children.js';
import { CryptoVerify } from './crypto-verify.js';
import { combine, cpuPerOp, type LoadResult, measure, type Workload, warmUp, window } from './load.js';
import { measureOidc, type OidcFigures } from './oidc-phase.js';
import { otpSignIns, refreshGrants, verifyEach, verifySame } from './phases.js';
import { signInMany, verifyBody, verifyBodyMinter } from './prepare.js';
import {
  type Figures,
  machine,
  markdown,
  type PostgresFigures,
  type Round,
  summary,
  type WorkerFigures,
} from './report.js';
import { readSettings } from './settings.js';
import {
  combineWithDatabase,
  type DatabaseFigure,
  type Dialect,
  measureWithDatabase,
  postgresReachable,
  startTessera,
  type Tessera,
  windowWithDatabase,
} from './tessera.js';

const settings = readSettings();
/** Never-seen tokens minted for one /verify figure on PostgreSQL: its warm-up and windows at a generous rate. */
const NEVER_SEEN_PER_FIGURE = Math.ceil(8000 * (settings.load.warmup + settings.load.duration));
const startedAt = performance.now();
const date = new Date();
const host = machine();

function log(message: string): void {
  const t = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[${t}s] ${message}\n`);
}

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const rate = (r: LoadResult, unit: string) =>
  `${nf.format(r.rate)} ${unit} (server CPU ${nf.format(cpuPerOp(r))} µs/op; p50 ${r.p50} ms, p99 ${r.p99} ms; ${r.failed} failed, ${r.errors} errors; peak RSS so far ${nf.format(r.peakRss / 2 ** 20)} MB)`;

const dir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
const cleanup = () => {
  killAllChildren();
  rmSync(dir, { recursive: true, force: true });
};
process.once('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the servers\n`);
    cleanup();
    process.exit(130);
  });
}
// Backstop: every phase has a fixed duration, so a run far beyond its plan is stuck somewhere.
const phaseSeconds = settings.load.warmup + settings.load.duration;
const watchdog = setTimeout(
  () => {
    process.stderr.write('benchmark exceeded its time budget; aborting\n');
    cleanup();
    process.exit(1);
  },
  // The OIDC figures mint their codes through the sign-in pages: up to 25 s a round and a warm-up.
  (120 + 8 * (phaseSeconds + 5) + (settings.oidc === 'on' ? 60 + 40 * (settings.load.rounds + 1) : 0)) * 1000,
);
watchdog.unref();

async function main(): Promise<void> {
  const { load } = settings;
  const slice = load.duration / load.rounds;
  log(
    `machine: ${host.cpu}, ${host.cores} cores, ${host.memoryGiB.toFixed(1)} GiB, Node ${host.node}, load ${host.loadAverage.toFixed(2)}`,
  );
  log(
    `${load.connections} connections, pipelining 1; ${load.warmup} s warm-up, ${load.duration} s measured per figure` +
      ` ((a), (b), (e) in ${load.rounds} interleaved rounds of ${slice} s)`,
  );

  const children: Child[] = [];
  const track = (child: Child) => {
    children.push(child);
    return child;
  };
  const started: Tessera[] = [];
  const tesseraOn = async (dialect: Dialect, workers = 1) => {
    const t = await startTessera({
      dialect,
      dir,
      workers,
      countStatements: workers === 1,
      nodeArgs: settings.serverNodeArgs,
    });
    started.push(t);
    return t;
  };
  try {
    const [sqlite, bare] = await Promise.all([
      tesseraOn('sqlite'),
      startChild('bare fastify', new URL('./bare-entry.ts', import.meta.url), {}).then(track),
    ]);
    const tessera = sqlite.server;
    const url = tessera.ready.url;
    const issuer = url;
    const apiKeyId = tessera.ready.apiKeyId!;
    log(`tessera on ${url}, bare fastify on ${bare.ready.url}`);

    const sessions = await signInMany(url, apiKeyId, settings.sessions, 'prep');
    log(`${sessions.length} users signed in by OTP`);
    const first = sessions[0]!.accessToken;

    // (f): the issuer's public key from its JWKS, a real token, servers idle.
    const jwks = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    const kid = (JSON.parse(Buffer.from(first.split('.')[0]!, 'base64url').toString()) as { kid: string })
      .kid;
    const jwk = jwks.keys.find((k) => k.kid === kid);
    if (!jwk) throw new Error('the token kid is not in the JWKS');
    const crypto = new CryptoVerify(first, jwk, issuer);
    const handwritten = track(
      await startChild('hand-written verifier', new URL('./verifier-entry.ts', import.meta.url), {
        BENCH_VERIFIER_JWK: JSON.stringify(jwk),
        BENCH_VERIFIER_ISSUER: issuer,
      }),
    );
    const reference = {
      decodeAndVerify: crypto.decodeAndVerify(settings.referenceSeconds),
      jose: await crypto.jose(settings.referenceSeconds),
    };
    log(
      `(f) in-process: decodeJwt+verifyEs256 ${nf.format(reference.decodeAndVerify)}/s, jose jwtVerify ${nf.format(reference.jose)}/s`,
    );

    // (a), (b), (e), (f raw): warm-ups, then interleaved rounds.
    const sameBody = Buffer.from(verifyBody(first));
    const bareLoad = { ...verifySame(bare.ready.url, apiKeyId, sameBody), server: bare };
    const repeatedLoad = { ...verifySame(url, apiKeyId, sameBody), server: tessera };
    const mint = await verifyBodyMinter(
      sqlite.databaseUrl,
      sqlite.masterKey,
      sessions.map((s) => s.accessToken),
    );
    const bodies: Buffer[] = [];
    const distinctLoad = { ...verifyEach(url, apiKeyId, bodies), server: tessera };
    // The same never-seen tokens against the hand-written verifier (it caches nothing).
    const handwrittenLoad = { ...verifyEach(handwritten.ready.url, apiKeyId, bodies), server: handwritten };
    // Never-seen tokens for the next `seconds` of load, at well above the fastest rate seen.
    let fastest = reference.decodeAndVerify;
    const topUp = (seconds: number) => {
      const needed = Math.ceil(fastest * seconds * 1.6) + 2000 - (bodies.length - distinctLoad.used());
      if (needed > 0) for (const body of mint(needed)) bodies.push(body);
    };
    topUp(load.warmup);
    await warmUp(bareLoad, load.connections, load.warmup);
    await warmUp(repeatedLoad, load.connections, load.warmup);
    await warmUp(distinctLoad, load.connections, load.warmup);
    await warmUp(handwrittenLoad, load.connections, load.warmup);
    log('warm-ups done');

    type HttpStep = Exclude<keyof Round, 'raw'>;
    const windows: Record<HttpStep, LoadResult[]> = { bare: [], repeated: [], distinct: [], handwritten: [] };
    const rounds: Round[] = [];
    const steps: Array<keyof Round> = ['bare', 'repeated', 'distinct', 'handwritten', 'raw'];
    const loads: Record<HttpStep, Workload> = {
      bare: bareLoad,
      repeated: repeatedLoad,
      distinct: distinctLoad,
      handwritten: handwrittenLoad,
    };
    for (let r = 0; r < load.rounds; r++) {
      const round: Round = { bare: 0, repeated: 0, distinct: 0, handwritten: 0, raw: 0 };
      // Rotate the order each round so no figure always runs first or last.
      for (let i = 0; i < steps.length; i++) {
        const step = steps[(i + r) % steps.length]!;
        if (step === 'raw') {
          round.raw = crypto.raw(settings.rawSecondsPerRound);
          continue;
        }
        if (step === 'distinct' || step === 'handwritten') topUp(slice);
        const result = await window(loads[step], load.connections, slice);
        windows[step].push(result);
        round[step] = result.rate;
        if (step === 'distinct') fastest = Math.max(fastest, result.rate);
      }
      rounds.push(round);
      log(
        `round ${r + 1}: (e) bare ${nf.format(round.bare)}, (b) repeated ${nf.format(round.repeated)}, ` +
          `(a) distinct ${nf.format(round.distinct)}, (g) hand-written ${nf.format(round.handwritten)} req/s; ` +
          `(f) raw ${nf.format(round.raw)}/s`,
      );
    }
    const distinct = combine(windows.distinct);
    const repeated = combine(windows.repeated);
    const bareResult = combine(windows.bare);
    const handwrittenResult = combine(windows.handwritten);
    const raw = rounds.reduce((sum, r) => sum + r.raw, 0) / rounds.length;
    const distinctPool = { minted: bodies.length, used: distinctLoad.used() };
    bodies.length = 0;
    log(`(a) /verify, distinct tokens: ${rate(distinct, 'req/s')}`);
    log(`(b) /verify, one repeated token: ${rate(repeated, 'req/s')}`);
    log(`(e) bare fastify: ${rate(bareResult, 'req/s')}`);
    log(`(g) hand-written verifier: ${rate(handwrittenResult, 'req/s')}`);
    log(`(f) raw ES256 verify (node:crypto): ${nf.format(raw)}/s`);

    const rotating = await measure(
      {
        ...verifyEach(
          url,
          apiKeyId,
          sessions.map((s) => Buffer.from(verifyBody(s.accessToken))),
        ),
        server: tessera,
      },
      load,
    );
    log(`(a') /verify, ${sessions.length} tokens in rotation: ${rate(rotating, 'req/s')}`);

    // PostgreSQL (one process) starts now: its refresh grants and sign-ins are measured in the
    // same rounds as SQLite's, so that the machine's drift hits both sides of PG ÷ SQLite.
    let pg: { tessera: Tessera; prepared: PostgresPrepared } | undefined;
    if (settings.postgres === 'off') {
      log('PostgreSQL figures skipped (BENCH_POSTGRES=off)');
    } else if (!(await postgresReachable())) {
      log(
        '!! PostgreSQL figures SKIPPED: no PostgreSQL answers at BENCH_POSTGRES_URL / TESSERA_TEST_DATABASE_URL',
      );
    } else {
      const t = await tesseraOn('postgres');
      pg = { tessera: t, prepared: await preparePostgres(t) };
    }

    const refreshes = await sqliteBesidePostgres(
      {
        ...refreshGrants(
          url,
          apiKeyId,
          sessions.map((s) => s.refreshToken),
        ),
        server: tessera,
      },
      pg && {
        tessera: pg.tessera,
        load: refreshGrants(
          pg.prepared.url,
          pg.prepared.apiKeyId,
          pg.prepared.sessions.map((s) => s.refreshToken),
        ),
      },
    );
    const refresh = refreshes.sqlite;
    log(`(c) refresh grants: ${rate(refresh, 'grants/s')}`);
    if (refreshes.postgres)
      log(
        `PostgreSQL: (c) refresh grants: ${rate(refreshes.postgres.result, 'grants/s')}, PostgreSQL CPU ${nf.format(refreshes.postgres.databaseCpuPerOp)} µs/op`,
      );

    const signIns = await sqliteBesidePostgres(
      { ...otpSignIns(url, apiKeyId, 'load'), server: tessera },
      pg && {
        tessera: pg.tessera,
        load: otpSignIns(pg.prepared.url, pg.prepared.apiKeyId, 'pg-load'),
      },
    );
    const otp = signIns.sqlite;
    log(`(d) OTP sign-ins: ${rate(otp, 'sign-ins/s')}`);
    if (signIns.postgres)
      log(
        `PostgreSQL: (d) OTP sign-ins: ${rate(signIns.postgres.result, 'sign-ins/s')}, PostgreSQL CPU ${nf.format(signIns.postgres.databaseCpuPerOp)} µs/op`,
      );

    // The OIDC figures, on the same SQLite Tessera, beside oidc-provider (its own children).
    let oidc: OidcFigures | undefined;
    if (settings.oidc === 'off') log('OIDC figures skipped (BENCH_OIDC=off)');
    else oidc = await measureOidc(tessera, load, log);

    let postgres: PostgresFigures | undefined;
    let workers: WorkerFigures | undefined;
    if (pg) {
      // (a) on PostgreSQL, in rounds with a second (a) on SQLite (new never-seen tokens on each).
      const distincts = await sqliteBesidePostgres(
        { ...verifyEach(url, apiKeyId, mint(NEVER_SEEN_PER_FIGURE)), server: tessera },
        {
          tessera: pg.tessera,
          load: verifyEach(pg.prepared.url, pg.prepared.apiKeyId, pg.prepared.mint(NEVER_SEEN_PER_FIGURE)),
        },
      );
      await Promise.all([sqlite.close(), pg.tessera.close()]);
      // Given `pg`, sqliteBesidePostgres measured PostgreSQL for (a), (c) and (d).
      const distinctOnPg = distincts.postgres!.result;
      const refreshOnPg = refreshes.postgres!;
      log(`(a) /verify, distinct tokens, beside PostgreSQL: ${rate(distincts.sqlite, 'req/s')}`);
      log(`PostgreSQL: (a) /verify, distinct tokens: ${rate(distinctOnPg, 'req/s')}`);
      postgres = {
        distinct: distinctOnPg,
        distinctOnSqlite: distincts.sqlite,
        refresh: refreshOnPg,
        otp: signIns.postgres,
      };
      const two = await workerFigures(await tesseraOn('postgres', 2));
      workers = {
        one: { distinct: distinctOnPg, refresh: refreshOnPg.result },
        two: { distinct: two.distinct, refresh: two.refresh.result },
      };
    } else {
      await sqlite.close();
    }

    const figures: Figures = {
      distinct,
      repeated,
      bare: bareResult,
      raw,
      rounds,
      rotating,
      refresh,
      otp,
      handwritten: handwrittenResult,
      postgres,
      workers,
      oidc,
      reference,
      distinctPool,
      sessions: sessions.length,
    };
    process.stdout.write(summary(figures));
    const text = markdown(figures, {
      date,
      settings: load,
      rawSecondsPerRound: settings.rawSecondsPerRound,
      referenceSeconds: settings.referenceSeconds,
      machine: host,
      elapsedSeconds: (performance.now() - startedAt) / 1000,
      loadAverageAtEnd: loadavg()[0] ?? 0,
    });
    if (settings.out) {
      writeFileSync(settings.out, text);
      log(`wrote ${settings.out}`);
    } else {
      process.stdout.write(`\n${text}`);
    }
  } finally {
    await Promise.allSettled([...children.map((c) => c.stop()), ...started.map((t) => t.close())]);
  }
}

/** A PostgreSQL Tessera's users signed in, and a minter of never-seen tokens of its key. */
interface PostgresPrepared {
  url: string;
  apiKeyId: string;
  label: string;
  sessions: Awaited<ReturnType<typeof signInMany>>;
  mint: Awaited<ReturnType<typeof verifyBodyMinter>>;
}

async function preparePostgres(t: Tessera): Promise<PostgresPrepared> {
  const { url } = t.server.ready;
  const apiKeyId = t.server.ready.apiKeyId!;
  const sessions = await signInMany(url, apiKeyId, Math.min(settings.sessions, 1000), 'pg-prep');
  const mint = await verifyBodyMinter(
    t.databaseUrl,
    t.masterKey,
    sessions.map((s) => s.accessToken),
  );
  return { url, apiKeyId, label: `PostgreSQL, ${t.server.name}`, sessions, mint };
}

/** (a) /verify with never-seen tokens on a PostgreSQL Tessera: a warm-up and one window. */
async function postgresDistinct(t: Tessera, prepared: PostgresPrepared): Promise<LoadResult> {
  const { load } = settings;
  const bodies = prepared.mint(NEVER_SEEN_PER_FIGURE);
  const distinct = (await measureWithDatabase(verifyEach(prepared.url, prepared.apiKeyId, bodies), t, load))
    .result;
  bodies.length = 0;
  log(`${prepared.label}: (a) /verify, distinct tokens: ${rate(distinct, 'req/s')}`);
  return distinct;
}

/**
 * One figure on SQLite and, given `pg`, on PostgreSQL: a warm-up of each, then `load.rounds`
 * rounds of one window on each (SQLite first in even rounds, PostgreSQL first in odd ones), so the
 * machine's other load, which drifts over minutes on a shared host, weighs on both sides of
 * PG ÷ SQLite alike. PostgreSQL's windows count its statements and backend CPU.
 */
async function sqliteBesidePostgres(
  sqliteLoad: Workload,
  pg: { tessera: Tessera; load: Workload } | undefined,
): Promise<{ sqlite: LoadResult; postgres: DatabaseFigure | undefined }> {
  const { load } = settings;
  const slice = load.duration / load.rounds;
  await warmUp(sqliteLoad, load.connections, load.warmup);
  if (pg) await warmUp(pg.load, load.connections, load.warmup);
  const onSqlite: LoadResult[] = [];
  const onPostgres: DatabaseFigure[] = [];
  const sqliteWindow = async () => onSqlite.push(await window(sqliteLoad, load.connections, slice));
  for (let r = 0; r < load.rounds; r++) {
    if (!pg || r % 2 === 0) await sqliteWindow();
    if (pg) onPostgres.push(await windowWithDatabase(pg.load, pg.tessera, load.connections, slice));
    if (pg && r % 2 === 1) await sqliteWindow();
  }
  return {
    sqlite: combine(onSqlite),
    postgres: pg ? combineWithDatabase(onPostgres) : undefined,
  };
}

/** (a) and (c) on a cluster of PostgreSQL workers, each alone. Stops the server when done. */
async function workerFigures(t: Tessera): Promise<{ distinct: LoadResult; refresh: DatabaseFigure }> {
  try {
    const prepared = await preparePostgres(t);
    const distinct = await postgresDistinct(t, prepared);
    const refresh = await measureWithDatabase(
      refreshGrants(
        prepared.url,
        prepared.apiKeyId,
        prepared.sessions.map((s) => s.refreshToken),
      ),
      t,
      settings.load,
    );
    log(
      `${prepared.label}: (c) refresh grants: ${rate(refresh.result, 'grants/s')}, PostgreSQL CPU ${nf.format(refresh.databaseCpuPerOp)} µs/op`,
    );
    return { distinct, refresh };
  } finally {
    await t.close();
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
} finally {
  cleanup();
}
