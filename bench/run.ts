// `npm run bench`: Tessera's throughput against a bare Fastify baseline and raw ES256
// verification, measured in one run; writes docs/BENCHMARKS.md. See bench/README.md.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Child, killAllChildren, startChild } from './children.js';
import { CryptoVerify } from './crypto-verify.js';
import { combine, cpuPerOp, type LoadResult, measure, type Workload, warmUp, window } from './load.js';
import { otpSignIns, refreshGrants, verifyEach, verifySame } from './phases.js';
import { signInMany, verifyBody, verifyBodyMinter } from './prepare.js';
import { type Figures, machine, markdown, type Round, summary } from './report.js';
import { readSettings } from './settings.js';

const settings = readSettings();
const startedAt = performance.now();
const date = new Date();
const host = machine();

function log(message: string): void {
  const t = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[${t}s] ${message}\n`);
}

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const rate = (r: LoadResult, unit: string) =>
  `${nf.format(r.rate)} ${unit} (server CPU ${nf.format(cpuPerOp(r))} µs/op; p50 ${r.p50} ms, p99 ${r.p99} ms; ${r.failed} failed, ${r.errors} errors)`;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

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
  (120 + 8 * (phaseSeconds + 5)) * 1000,
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

  const port = await freePort();
  const masterKey = randomBytes(32).toString('base64');
  const databaseUrl = `sqlite:${join(dir, 'tessera.db')}`;
  const issuer = `http://127.0.0.1:${port}`;
  const children: Child[] = [];
  const track = (child: Child) => {
    children.push(child);
    return child;
  };
  try {
    const [tessera, bare] = await Promise.all([
      startChild(
        'tessera',
        new URL('./server-entry.ts', import.meta.url),
        {
          TESSERA_ENV: 'test',
          TESSERA_LOG_LEVEL: 'warn',
          TESSERA_HOST: '127.0.0.1',
          TESSERA_PORT: String(port),
          TESSERA_ISSUER: issuer,
          TESSERA_DATABASE_URL: databaseUrl,
          TESSERA_DATA_DIR: dir,
          TESSERA_MASTER_KEY: masterKey,
          TESSERA_DELIVERY: 'dev',
          TESSERA_RATE_LIMIT_IP: '1000000000/60',
          TESSERA_RATE_LIMIT_OTP_START: '1000000000/60',
          TESSERA_RATE_LIMIT_OTP_GUESSES: '1000000000/60',
          TESSERA_OTP_RESEND_INTERVAL: '0',
          // The OTP phase signs in far more new users than a project's e-mail budget allows.
          TESSERA_EMAIL_BUDGET_HOURLY: '0',
          TESSERA_EMAIL_BUDGET_DAILY: '0',
        },
        settings.serverNodeArgs,
      ).then(track),
      startChild('bare fastify', new URL('./bare-entry.ts', import.meta.url), {}).then(track),
    ]);
    const url = tessera.ready.url;
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
      databaseUrl,
      masterKey,
      sessions.map((s) => s.accessToken),
    );
    const bodies: Buffer[] = [];
    const distinctLoad = { ...verifyEach(url, apiKeyId, bodies), server: tessera };
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
    log('warm-ups done');

    const windows: Record<'bare' | 'repeated' | 'distinct', LoadResult[]> = {
      bare: [],
      repeated: [],
      distinct: [],
    };
    const rounds: Round[] = [];
    const steps: Array<keyof Round> = ['bare', 'repeated', 'distinct', 'raw'];
    const loads: Record<'bare' | 'repeated' | 'distinct', Workload> = {
      bare: bareLoad,
      repeated: repeatedLoad,
      distinct: distinctLoad,
    };
    for (let r = 0; r < load.rounds; r++) {
      const round: Round = { bare: 0, repeated: 0, distinct: 0, raw: 0 };
      // Rotate the order each round so no figure always runs first or last.
      for (let i = 0; i < steps.length; i++) {
        const step = steps[(i + r) % steps.length]!;
        if (step === 'raw') {
          round.raw = crypto.raw(settings.rawSecondsPerRound);
          continue;
        }
        if (step === 'distinct') topUp(slice);
        const result = await window(loads[step], load.connections, slice);
        windows[step].push(result);
        round[step] = result.rate;
        if (step === 'distinct') fastest = Math.max(fastest, result.rate);
      }
      rounds.push(round);
      log(
        `round ${r + 1}: (e) bare ${nf.format(round.bare)}, (b) repeated ${nf.format(round.repeated)}, ` +
          `(a) distinct ${nf.format(round.distinct)} req/s; (f) raw ${nf.format(round.raw)}/s`,
      );
    }
    const distinct = combine(windows.distinct);
    const repeated = combine(windows.repeated);
    const bareResult = combine(windows.bare);
    const raw = rounds.reduce((sum, r) => sum + r.raw, 0) / rounds.length;
    const distinctPool = { minted: bodies.length, used: distinctLoad.used() };
    bodies.length = 0;
    log(`(a) /verify, distinct tokens: ${rate(distinct, 'req/s')}`);
    log(`(b) /verify, one repeated token: ${rate(repeated, 'req/s')}`);
    log(`(e) bare fastify: ${rate(bareResult, 'req/s')}`);
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

    const refresh = await measure(
      {
        ...refreshGrants(
          url,
          apiKeyId,
          sessions.map((s) => s.refreshToken),
        ),
        server: tessera,
      },
      load,
    );
    log(`(c) refresh grants: ${rate(refresh, 'grants/s')}`);

    const otp = await measure({ ...otpSignIns(url, apiKeyId, 'load'), server: tessera }, load);
    log(`(d) OTP sign-ins: ${rate(otp, 'sign-ins/s')}`);

    const figures: Figures = {
      distinct,
      repeated,
      bare: bareResult,
      raw,
      rounds,
      rotating,
      refresh,
      otp,
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
    await Promise.allSettled(children.map((c) => c.stop()));
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
