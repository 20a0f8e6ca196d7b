// The write paths on PostgreSQL beside SQLite, alone (`npm run bench` measures them too, with the
// rest): refresh grants and OTP sign-ins, with the statements each sends to the database and the
// CPU it costs there. See bench/README.md ("PostgreSQL").
// Run: node --conditions=tessera-source --import tsx bench/postgres.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllChildren } from './children.js';
import { cpuPerOp } from './load.js';
import { otpSignIns, refreshGrants } from './phases.js';
import { signInMany } from './prepare.js';
import { machine } from './report.js';
import { readSettings } from './settings.js';
import { type DatabaseFigure, type Dialect, measureWithDatabase, startTessera } from './tessera.js';

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
/** Users signed in first: their refresh tokens feed the refresh figure (one chain per connection). */
const SESSIONS = 500;

const startedAt = performance.now();
function log(message: string): void {
  const t = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[${t}s] ${message}\n`);
}

interface Row extends DatabaseFigure {
  dialect: Dialect;
  figure: Figure;
}

async function runDialect(dialect: Dialect, dir: string): Promise<Row[]> {
  const tessera = await startTessera({
    dialect,
    dir,
    countStatements: true,
    nodeArgs: settings.serverNodeArgs,
  });
  try {
    const { url } = tessera.server.ready;
    const apiKeyId = tessera.server.ready.apiKeyId!;
    const rows: Row[] = [];
    for (const figure of figures) {
      const workload =
        figure === 'refresh'
          ? refreshGrants(
              url,
              apiKeyId,
              (await signInMany(url, apiKeyId, SESSIONS, 'prep')).map((s) => s.refreshToken),
            )
          : otpSignIns(url, apiKeyId, 'load');
      rows.push({ dialect, figure, ...(await measureWithDatabase(workload, tessera, settings.load)) });
      log(`${dialect} ${figure}: ${describe(rows.at(-1)!)}`);
    }
    return rows;
  } finally {
    await tessera.close();
  }
}

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const orDash = (n: number, format = nf) => (Number.isFinite(n) ? format.format(n) : '–');

function describe(row: Row): string {
  const r = row.result;
  return (
    `${nf.format(r.rate)}/s, server CPU ${orDash(cpuPerOp(r))} µs/op, database CPU ${orDash(row.databaseCpuPerOp)} µs/op, ` +
    `${orDash(row.statementsPerOp, nf1)} statements/op (p50 ${r.p50} ms, p99 ${r.p99} ms; ${r.failed} failed, ${r.errors} errors; peak RSS ${orDash(r.peakRss / 2 ** 20)} MB)`
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
