import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import type { FastifyInstance, onRouteHookHandler } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config/index.js';
import type { AppContext, AppDeps } from '../../src/context.js';
import { MasterKey } from '../../src/crypto/master-key.js';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { createLogger } from '../../src/logger.js';
import type { Delivery } from '../../src/modules/otp/delivery/delivery.js';
import { DevOutbox } from '../../src/modules/otp/delivery/dev-outbox.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';

export type Dialect = 'sqlite' | 'postgres';

/** PostgreSQL for tests: TESSERA_TEST_DATABASE_URL (CI sets it); without it those tests skip, saying so. */
export const postgresUrl = process.env.TESSERA_TEST_DATABASE_URL;

const skipNotice =
  'PostgreSQL tests skipped: set TESSERA_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test';
let noticeShown = false;

/**
 * Runs a suite once per storage dialect: SQLite always, PostgreSQL when configured (a visible
 * skip otherwise). Each test should start its own server with `startServer(dialect)`.
 */
export function eachDialect(name: string, suite: (dialect: Dialect) => void): void {
  describe(`${name} [sqlite]`, () => suite('sqlite'));
  if (postgresUrl) {
    describe(`${name} [postgres]`, () => suite('postgres'));
  } else {
    if (!noticeShown) {
      noticeShown = true;
      console.log(`# ${skipNotice}`);
    }
    skippedSuite(`${name} [postgres]`, skipNotice);
  }
}

/**
 * A suite that does not run, counted in the runner's `skipped` total: Node's runner counts
 * skipped tests, not skipped suites (`describe(name, { skip })` printed "skipped 0").
 */
export function skippedSuite(name: string, reason: string): void {
  describe(name, () => {
    test('(every test of this suite)', { skip: reason }, () => {});
  });
}

/** A suite that needs PostgreSQL: run with TESSERA_TEST_DATABASE_URL, otherwise a counted skip. */
export function describePostgres(name: string, suite: () => void): void {
  if (postgresUrl) describe(name, suite);
  else skippedSuite(name, 'needs PostgreSQL: set TESSERA_TEST_DATABASE_URL');
}

/** A free TCP port on loopback (so the issuer URL can name it before the server listens). */
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

export interface TestStorage {
  db: Db;
  url: string;
  /** Opens another connection to the same database (a second server process, in effect). */
  reopen(): Promise<Db>;
  cleanup(): Promise<void>;
}

/** A fresh database: a temporary SQLite file, or a new PostgreSQL schema dropped afterwards. */
export async function createStorage(dialect: Dialect): Promise<TestStorage> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
    const url = `sqlite:${join(dir, 'tessera.db')}`;
    const db = await connect(url);
    await migrate(db);
    const opened: Db[] = [db];
    return {
      db,
      url,
      reopen: async () => {
        const other = await connect(url);
        opened.push(other);
        return other;
      },
      cleanup: async () => {
        for (const d of opened) await d.close().catch(() => {});
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (!postgresUrl) throw new Error(skipNotice);
  const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
  const db = await connect(postgresUrl, { schema });
  await migrate(db);
  const opened: Db[] = [db];
  return {
    db,
    url: postgresUrl,
    reopen: async () => {
      const other = await connect(postgresUrl, { schema });
      opened.push(other);
      return other;
    },
    cleanup: async () => {
      for (const d of opened) await d.close().catch(() => {});
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

export interface StartOptions {
  /** Extra TESSERA_* variables. */
  env?: Record<string, string>;
  /** Injected clock (ms). */
  now?: () => number;
  /** Another delivery than the development outbox. */
  delivery?: Delivery;
  /** Share storage with another server (two processes on one database). */
  storage?: TestStorage;
  /** Share the master key too (needed with shared storage). */
  masterKey?: string;
  /** Where the server logs (JSON lines), at TESSERA_LOG_LEVEL or `info`; silent by default. */
  logStream?: { write(line: string): void };
  /** An `onRoute` hook added before any route (to wrap a route's handler). */
  onRoute?: onRouteHookHandler;
  /** Client ID Metadata Documents: fetch limits and resolver (AppDeps.clientMetadata). */
  clientMetadata?: AppDeps['clientMetadata'];
  /** The port to listen on (chosen before, e.g. to name it in TESSERA_ISSUER); default a free one. */
  port?: number;
}

export interface TestServer {
  url: string;
  /** The app itself, for `inject` where real HTTP would only slow a test down (the fuzz test). */
  app: FastifyInstance;
  config: Readonly<Config>;
  ctx: AppContext;
  storage: TestStorage;
  masterKey: string;
  outbox: DevOutbox;
  /** The project every test server starts with (origin http://app.test), named `test` (`test-<port>` on shared storage). */
  project: ProjectCredentials;
  /** fetch against the server; JSON bodies are serialised, answers parsed. */
  request(
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string>; raw?: string },
  ): Promise<TestResponse>;
  /** The last code sent to `to`. */
  lastCode(to: string): string;
  /** OTP sign-in through HTTP; returns the bundle. */
  signIn(identifier: string, project?: ProjectCredentials): Promise<OAuthTokenBundle>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test answers are inspected field by field
  body: any;
  text: string;
}

/** Starts a real server listening on loopback, with a fresh database of the given dialect. */
export async function startServer(dialect: Dialect, options: StartOptions = {}): Promise<TestServer> {
  const port = options.port ?? (await freePort());
  const storage = options.storage ?? (await createStorage(dialect));
  const masterKey = options.masterKey ?? randomBytes(32).toString('base64');
  const config = loadConfig({
    TESSERA_ENV: 'test',
    TESSERA_PORT: String(port),
    TESSERA_ISSUER: `http://127.0.0.1:${port}`,
    TESSERA_MASTER_KEY: masterKey,
    TESSERA_DATA_DIR: tmpdir(),
    TESSERA_DELIVERY: 'dev',
    TESSERA_LOG_LEVEL: process.env.TESSERA_TEST_LOG_LEVEL ?? 'silent',
    // Off unless a test turns it on: it adds the console project beside the test's own.
    TESSERA_CONSOLE: 'false',
    ...options.env,
  });
  const logger = options.logStream
    ? createLogger(options.env?.TESSERA_LOG_LEVEL ?? 'info', options.logStream)
    : createLogger(config.logLevel);
  const master = MasterKey.parse(masterKey);
  const db = options.storage ? await storage.reopen() : storage.db;
  const keys = new KeyStore(db, master.derive('signing-key-encryption'), options.now);
  await keys.init();
  const outbox = new DevOutbox({}, logger);
  const { app, ctx } = await buildApp(config, {
    db,
    keys,
    masterKey: master,
    delivery: options.delivery ?? outbox,
    logger,
    checkResponses: true,
    ...(options.now ? { now: options.now } : {}),
    ...(options.onRoute ? { onRoute: options.onRoute } : {}),
    ...(options.clientMetadata ? { clientMetadata: options.clientMetadata } : {}),
  });
  await app.listen({ host: '127.0.0.1', port });
  // Project names are unique: a second server on the same storage names its project after its port.
  const project = await ctx.projects.create({
    name: options.storage ? `test-${port}` : 'test',
    origins: ['http://app.test'],
  });
  const url = `http://127.0.0.1:${port}`;

  const request: TestServer['request'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: response.status, headers: response.headers, body: parsed, text };
  };

  const lastCode = (to: string) => {
    const all = outbox.list();
    const entry = all.find((m) => m.to === to);
    if (!entry) {
      const names = [...new Set(all.map((m) => m.to))].slice(0, 5).join(', ') || 'nobody';
      throw new Error(`no code was sent to ${to} (the outbox holds ${all.length}, to ${names})`);
    }
    return entry.code;
  };

  return {
    url,
    app,
    config,
    ctx,
    storage,
    masterKey,
    outbox,
    project,
    request,
    lastCode,
    async signIn(identifier, p = project) {
      const started = await request('POST', '/v1/auth/otp/start', {
        body: { identifier },
        headers: { api_key_id: p.api_key_id },
      });
      if (started.status !== 200) throw new Error(`otp/start answered ${started.status}: ${started.text}`);
      const to = outbox.list()[0]!.to;
      const done = await request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: started.body.challenge_id, code: lastCode(to), getOAuthToken: true },
        headers: { api_key_id: p.api_key_id },
      });
      if (done.status !== 200) throw new Error(`otp/complete answered ${done.status}: ${done.text}`);
      return done.body.oauth_token as OAuthTokenBundle;
    },
    async close() {
      await app.close();
      if (!options.storage) await storage.cleanup();
    },
  };
}

/** Limits high enough that a suite signing in many users is never throttled. */
export const RELAXED_LIMITS: Readonly<Record<string, string>> = {
  TESSERA_RATE_LIMIT_IP: '100000/60',
  TESSERA_RATE_LIMIT_OTP_START: '1000/900',
  TESSERA_OTP_RESEND_INTERVAL: '0',
};

let emailCounter = 0;
/** A fresh e-mail address per call, e.g. `users3.1795…@example.com`. */
export const uniqueEmail = (prefix: string) => `${prefix}${++emailCounter}.${Date.now()}@example.com`;

/** `Authorization: Basic` value of a project's API key credentials (integrator API). */
export const basicAuth = (p: { api_key_id: string; api_key_secret: string }) =>
  `Basic ${Buffer.from(`${p.api_key_id}:${p.api_key_secret}`).toString('base64')}`;

/**
 * Requests that all carry one `Authorization` value, paths under `prefix`: the integrator API
 * (`basicAuth(project)`), the operator API (`Bearer <operator token>`, prefix `/v1/operator`).
 */
export function authorizedClient(server: TestServer, authorization: string, prefix = '') {
  return (method: string, path: string, body?: unknown): Promise<TestResponse> =>
    server.request(method, `${prefix}${path}`, {
      ...(body !== undefined ? { body } : {}),
      headers: { authorization },
    });
}

/** A refused request: an RFC 9457 problem document with the stable code. */
export function assertProblem(response: TestResponse, status: number, code: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(response.body.code, code, response.text);
  assert.equal(response.body.status, status);
  assert.equal(typeof response.body.title, 'string');
  assert.equal(typeof response.body.detail, 'string');
  assert.ok(response.body.detail.length > 0);
}
