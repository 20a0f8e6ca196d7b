// The write paths on PostgreSQL beside SQLite, in one run: refresh grants and OTP sign-ins, with the
// statements each sends to the database and the CPU it costs there. See bench/README.md
// ("PostgreSQL"). Run: node --conditions=tessera-source --import tsx bench/postgres.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Child, killAllChildren, startChild } from './children.js';
import { cpuPerOp, type LoadResult, type Workload, warmUp, window } from './load.js';
import { otpSignIns, refreshGrants } from './phases.js';
import { signInMany } from './prepare.js';
import { machine } from './report.js';
import { readSettings } from './settings.js';

type Dialect = 'sqlite' | 'postgres';
type Figure = 'refresh' | 'otp';

function list<T extends string>(name: string, raw: string | undefined, allowed: readonly T[]): T[] {
  const picked = (raw ?? allowed.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const p of picked) {
    if (!allowed.includes(p as T)) throw new Error(`${name} takes ${allowed.join(', ')}; got "${p}"`);
  }
  return picked as T[];
}

const settings = readSettings();
const figures = list('BENCH_FIGURES', process.env.BENCH_FIGURES, ['refresh', 'otp'] as const);
const dialects = list('BENCH_DIALECTS', process.env.BENCH_DIALECTS, ['sqlite', 'postgres'] as const);
const postgresUrl =
  process.env.BENCH_POSTGRES_URL ??
  process.env.TESSERA_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
/** Users signed in first: their refresh tokens feed the refresh figure (one chain per connection). */
const SESSIONS = 500;

const startedAt = performance.now();
function log(message: string): void {
  const t = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[${t}s] ${message}\n`);
}

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

async function admin<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: postgresUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * CPU time (user + system, µs) of the PostgreSQL backends serving one application name, read from
 * /proc: PostgreSQL must run on this machine (it does on loopback). Per backend pid.
 */
async function backendCpu(applicationName: string): Promise<Map<number, number>> {
  const rows = await admin<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
    applicationName,
  ]);
  const ticks = 1_000_000 / 100; // USER_HZ is 100 on Linux
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      // After the command name (in parentheses, may hold spaces): field 14 utime, 15 stime.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * ticks);
    } catch {
      // The backend ended meanwhile.
    }
  }
  return cpu;
}

function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, micros] of after) total += micros - (before.get(pid) ?? 0);
  return total;
}

interface Row {
  dialect: Dialect;
  figure: Figure;
  result: LoadResult;
  statementsPerOp: number;
  databaseCpuPerOp: number;
}

/** Warm-up, then one window, with the statements and database CPU of the window alone. */
async function measured(
  dialect: Dialect,
  figure: Figure,
  workload: Workload,
  server: Child,
  applicationName: string | undefined,
): Promise<Row> {
  await warmUp(workload, settings.load.connections, settings.load.warmup);
  const before = await server.usage();
  const dbBefore = applicationName ? await backendCpu(applicationName) : undefined;
  const result = await window(workload, settings.load.connections, settings.load.duration);
  const dbAfter = applicationName ? await backendCpu(applicationName) : undefined;
  const after = await server.usage();
  const ops = Math.max(1, result.ok);
  const statements =
    after.statements === undefined || before.statements === undefined
      ? Number.NaN
      : // Each OTP sign-in is two requests; the failed ones (if any) sent statements too.
        (after.statements - before.statements) / ops;
  return {
    dialect,
    figure,
    result,
    statementsPerOp: statements,
    databaseCpuPerOp: dbBefore && dbAfter ? cpuSpent(dbBefore, dbAfter) / ops : Number.NaN,
  };
}

async function runDialect(dialect: Dialect, dir: string): Promise<Row[]> {
  const tag = randomBytes(5).toString('hex');
  const schema = `tessera_bench_${tag}`;
  const applicationName = `tessera_bench_${tag}`;
  let databaseUrl = `sqlite:${join(dir, `${tag}.db`)}`;
  if (dialect === 'postgres') {
    await admin(`create schema ${schema}`);
    const url = new URL(postgresUrl);
    url.searchParams.set('options', `-c search_path=${schema}`);
    url.searchParams.set('application_name', applicationName);
    databaseUrl = url.toString();
  }
  const port = await freePort();
  let server: Child | undefined;
  try {
    server = await startChild(
      `tessera (${dialect})`,
      new URL('./server-entry.ts', import.meta.url),
      {
        TESSERA_ENV: 'test',
        TESSERA_LOG_LEVEL: 'warn',
        TESSERA_HOST: '127.0.0.1',
        TESSERA_PORT: String(port),
        TESSERA_ISSUER: `http://127.0.0.1:${port}`,
        TESSERA_DATABASE_URL: databaseUrl,
        TESSERA_DATA_DIR: dir,
        TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
        TESSERA_DELIVERY: 'dev',
        TESSERA_RATE_LIMIT_IP: '1000000000/60',
        TESSERA_RATE_LIMIT_OTP_START: '1000000000/60',
        TESSERA_RATE_LIMIT_OTP_GUESSES: '1000000000/60',
        TESSERA_OTP_RESEND_INTERVAL: '0',
        BENCH_COUNT_STATEMENTS: dialect === 'postgres' ? '1' : '0',
      },
      settings.serverNodeArgs,
    );
    const { url } = server.ready;
    const apiKeyId = server.ready.apiKeyId!;
    const backends = dialect === 'postgres' ? applicationName : undefined;
    const rows: Row[] = [];
    for (const figure of figures) {
      if (figure === 'refresh') {
        const sessions = await signInMany(url, apiKeyId, SESSIONS, `prep-${tag}`);
        const workload = {
          ...refreshGrants(
            url,
            apiKeyId,
            sessions.map((s) => s.refreshToken),
          ),
          server,
        };
        rows.push(await measured(dialect, figure, workload, server, backends));
      } else {
        const workload = { ...otpSignIns(url, apiKeyId, `load-${tag}`), server };
        rows.push(await measured(dialect, figure, workload, server, backends));
      }
      const last = rows.at(-1)!;
      log(`${dialect} ${figure}: ${describe(last)}`);
    }
    return rows;
  } finally {
    await server?.stop();
    if (dialect === 'postgres') await admin(`drop schema if exists ${schema} cascade`);
  }
}

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const orDash = (n: number, format = nf) => (Number.isFinite(n) ? format.format(n) : '–');

function describe(row: Row): string {
  const r = row.result;
  return (
    `${nf.format(r.rate)}/s, server CPU ${orDash(cpuPerOp(r))} µs/op, database CPU ${orDash(row.databaseCpuPerOp)} µs/op, ` +
    `${orDash(row.statementsPerOp, nf1)} statements/op (p50 ${r.p50} ms, p99 ${r.p99} ms; ${r.failed} failed, ${r.errors} errors)`
  );
}

function table(rows: Row[]): string {
  const lines = [
    '| Figure | Dialect | Rate /s | Server CPU µs/op | PostgreSQL CPU µs/op | Statements/op | PG ÷ SQLite |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const sqlite = rows.find((r) => r.figure === row.figure && r.dialect === 'sqlite');
    const ratio = row.dialect === 'postgres' && sqlite ? row.result.rate / sqlite.result.rate : Number.NaN;
    lines.push(
      `| ${row.figure === 'refresh' ? 'refresh grants' : 'OTP sign-ins (start + complete)'} | ${row.dialect} | ` +
        `${nf.format(row.result.rate)} | ${orDash(cpuPerOp(row.result))} | ${orDash(row.databaseCpuPerOp)} | ` +
        `${orDash(row.statementsPerOp, nf1)} | ${Number.isFinite(ratio) ? ratio.toFixed(2) : ''} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const dir = mkdtempSync(join(tmpdir(), 'tessera-bench-pg-'));
const cleanup = () => {
  killAllChildren();
  rmSync(dir, { recursive: true, force: true });
};
process.once('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanup();
    process.exit(130);
  });
}
const budget =
  (60 + dialects.length * figures.length * (settings.load.warmup + settings.load.duration + 30)) * 1000;
setTimeout(() => {
  process.stderr.write('benchmark exceeded its time budget; aborting\n');
  cleanup();
  process.exit(1);
}, budget).unref();

try {
  const host = machine();
  log(`machine: ${host.cpu}, ${host.cores} cores, Node ${host.node}, load ${host.loadAverage.toFixed(2)}`);
  log(
    `${settings.load.connections} connections, ${settings.load.warmup} s warm-up, ${settings.load.duration} s measured; ` +
      `figures ${figures.join(', ')} on ${dialects.join(', ')}`,
  );
  const rows: Row[] = [];
  for (const dialect of dialects) rows.push(...(await runDialect(dialect, dir)));
  process.stdout.write(`\n${table(rows)}`);
} catch (error) {
  process.stderr.write(
    `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
} finally {
  cleanup();
}
