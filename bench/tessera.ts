// Starting the Tessera under test (server-entry.ts) on SQLite or PostgreSQL, one process or a
// cluster, and reading what PostgreSQL spends on it. Shared by run.ts and postgres.ts.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { SERVE_NODE_FLAGS } from '../packages/server/src/node-flags.js';
import { type Child, startChild } from './children.js';
import { combine, type LoadResult, type LoadSettings, type Workload, warmUp, window } from './load.js';
import { processCpuMicros } from './proc.js';

export type Dialect = 'sqlite' | 'postgres';

export const POSTGRES_URL =
  process.env.BENCH_POSTGRES_URL ??
  process.env.TESSERA_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';

export async function freePort(): Promise<number> {
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

/** One statement on its own connection (schema set-up, pg_stat_activity). */
export async function admin<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Whether PostgreSQL answers at POSTGRES_URL. */
export async function postgresReachable(): Promise<boolean> {
  try {
    await admin('select 1');
    return true;
  } catch {
    return false;
  }
}

/**
 * CPU time (user + system, µs) of the PostgreSQL backends serving one application name, per
 * backend pid, read from /proc: PostgreSQL must run on this machine (it does on loopback).
 */
export async function backendCpu(applicationName: string): Promise<Map<number, number>> {
  const rows = await admin<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
    applicationName,
  ]);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const micros = processCpuMicros(pid);
    if (micros !== undefined) cpu.set(pid, micros);
  }
  return cpu;
}

/** CPU the backends spent between two `backendCpu` readings (new backends count from zero). */
export function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, micros] of after) total += micros - (before.get(pid) ?? 0);
  return total;
}

export interface TesseraOptions {
  dialect: Dialect;
  /** Temporary directory for the SQLite database and the data dir. */
  dir: string;
  /** Serving processes (a cluster when more than one). */
  workers?: number;
  /** Count the statements sent to PostgreSQL (one process only). */
  countStatements?: boolean;
  nodeArgs?: string[];
  /**
   * Another Tessera whose database, master key and issuer this one shares (it creates no project
   * and, on PostgreSQL, leaves the schema to that one).
   */
  join?: Tessera;
}

export interface Tessera {
  server: Child;
  databaseUrl: string;
  masterKey: string;
  /** PostgreSQL's application_name of its connections (for `backendCpu`). */
  applicationName?: string;
  /** Stops the server and drops its PostgreSQL schema. */
  close(): Promise<void>;
}

/**
 * A Tessera (server-entry.ts) on a fresh database: a SQLite file in `dir`, or a new schema in
 * POSTGRES_URL's database (dropped again by `close`). Rate limits and delivery budgets are raised
 * out of the way of the load.
 */
export async function startTessera(options: TesseraOptions): Promise<Tessera> {
  const { dialect, dir, join: joined } = options;
  const tag = randomBytes(5).toString('hex');
  const schema = `tessera_bench_${tag}`;
  const applicationName = `tessera_bench_${tag}`;
  let databaseUrl = joined?.databaseUrl ?? `sqlite:${join(dir, `${tag}.db`)}`;
  if (dialect === 'postgres' && !joined) {
    await admin(`create schema ${schema}`);
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    url.searchParams.set('application_name', applicationName);
    databaseUrl = url.toString();
  }
  const dropSchema = async () => {
    if (dialect === 'postgres' && !joined) await admin(`drop schema if exists ${schema} cascade`);
  };
  const port = await freePort();
  const masterKey = joined?.masterKey ?? randomBytes(32).toString('base64');
  const workers = options.workers ?? 1;
  // A cluster's primary creates its own project, which a joined database has already.
  if (joined && workers > 1) throw new Error('a Tessera that joins another runs as one process');
  try {
    const server = await startChild(
      `tessera (${dialect}${workers > 1 ? `, ${workers} workers` : ''}${joined ? ', joined' : ''})`,
      new URL('./server-entry.ts', import.meta.url),
      {
        TESSERA_ENV: 'test',
        TESSERA_LOG_LEVEL: 'warn',
        TESSERA_HOST: '127.0.0.1',
        TESSERA_PORT: String(port),
        TESSERA_ISSUER: joined?.server.ready.url ?? `http://127.0.0.1:${port}`,
        TESSERA_DATABASE_URL: databaseUrl,
        TESSERA_DATA_DIR: dir,
        TESSERA_MASTER_KEY: masterKey,
        TESSERA_DELIVERY: 'dev',
        TESSERA_RATE_LIMIT_IP: '1000000000/60',
        TESSERA_RATE_LIMIT_OTP_START: '1000000000/60',
        TESSERA_RATE_LIMIT_OTP_GUESSES: '1000000000/60',
        TESSERA_OTP_RESEND_INTERVAL: '0',
        // The OTP figures sign in far more new users than a project's e-mail budget allows.
        TESSERA_EMAIL_BUDGET_HOURLY: '0',
        TESSERA_EMAIL_BUDGET_DAILY: '0',
        BENCH_WORKERS: String(workers),
        BENCH_COUNT_STATEMENTS: options.countStatements && dialect === 'postgres' ? '1' : '0',
        BENCH_JOIN: joined ? '1' : '0',
      },
      // The flags every `tessera serve` runs with, then any BENCH_SERVER_NODE_ARGS (which win).
      [...SERVE_NODE_FLAGS, ...(options.nodeArgs ?? [])],
      // Loading the server from TypeScript source takes seconds, much longer on a busy machine.
      120_000,
    );
    return {
      server,
      databaseUrl,
      masterKey,
      ...(dialect === 'postgres' ? { applicationName: joined?.applicationName ?? applicationName } : {}),
      close: async () => {
        await server.stop();
        await dropSchema();
      },
    };
  } catch (error) {
    await dropSchema();
    throw error;
  }
}

export interface DatabaseFigure {
  result: LoadResult;
  /** Statements sent to PostgreSQL per successful operation (NaN when not counted). */
  statementsPerOp: number;
  /** PostgreSQL backend CPU per successful operation, µs (NaN on SQLite). */
  databaseCpuPerOp: number;
}

/** One window of `seconds`, with the statements and database CPU of the window alone (no warm-up). */
export async function windowWithDatabase(
  workload: Workload,
  tessera: Tessera,
  connections: number,
  seconds: number,
): Promise<DatabaseFigure> {
  const { server, applicationName } = tessera;
  const before = await server.usage();
  const dbBefore = applicationName ? await backendCpu(applicationName) : undefined;
  const result = await window({ ...workload, server }, connections, seconds);
  const dbAfter = applicationName ? await backendCpu(applicationName) : undefined;
  const after = await server.usage();
  const ops = Math.max(1, result.ok);
  return {
    result,
    statementsPerOp:
      after.statements === undefined || before.statements === undefined
        ? Number.NaN
        : // Failed operations (if any) sent statements too.
          (after.statements - before.statements) / ops,
    databaseCpuPerOp: dbBefore && dbAfter ? cpuSpent(dbBefore, dbAfter) / ops : Number.NaN,
  };
}

/** Several windows of one workload as one figure: per-operation figures weighted by operations. */
export function combineWithDatabase(figures: DatabaseFigure[]): DatabaseFigure {
  const ops = figures.map((f) => Math.max(1, f.result.ok));
  const total = ops.reduce((a, b) => a + b, 0);
  const weighted = (pick: (f: DatabaseFigure) => number) =>
    figures.reduce((sum, f, i) => sum + pick(f) * ops[i]!, 0) / total;
  return {
    result: combine(figures.map((f) => f.result)),
    statementsPerOp: weighted((f) => f.statementsPerOp),
    databaseCpuPerOp: weighted((f) => f.databaseCpuPerOp),
  };
}

/** A warm-up, then one window, with the statements and database CPU of the window alone. */
export async function measureWithDatabase(
  workload: Workload,
  tessera: Tessera,
  load: LoadSettings,
): Promise<DatabaseFigure> {
  await warmUp(workload, load.connections, load.warmup);
  return windowWithDatabase(workload, tessera, load.connections, load.duration);
}
