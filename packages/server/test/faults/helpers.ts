import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { describe } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import type { DatabaseTimeouts } from '../../src/db/postgres.js';
import { postgresUrl, skippedSuite, type TestStorage } from '../helpers/harness.js';

export const root = fileURLToPath(new URL('../../../../', import.meta.url));

const skipNotice =
  'PostgreSQL fault tests skipped: set TESSERA_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test';

let noticeShown = false;

/** A suite that needs the real PostgreSQL: skipped, visibly, without TESSERA_TEST_DATABASE_URL. */
export function postgresOnly(name: string, suite: (url: string) => void): void {
  if (postgresUrl) {
    const url = postgresUrl;
    describe(`${name} [postgres]`, () => suite(url));
  } else {
    if (!noticeShown) console.log(`# ${skipNotice}`);
    noticeShown = true;
    skippedSuite(`${name} [postgres]`, skipNotice);
  }
}

export const newSchema = () => `tessera_fault_${randomBytes(6).toString('hex')}`;

/** Runs one statement on a connection of its own (the test's, never the server's pool). */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Terminates every backend whose application_name is `applicationName` (the pool under test names
 * its connections so): never another session of the database. Returns how many were terminated.
 */
export async function terminateBackends(url: string, applicationName: string): Promise<number> {
  const rows = await adminQuery<{ terminated: boolean }>(
    url,
    'select pg_terminate_backend(pid) as terminated from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
    [applicationName],
  );
  return rows.filter((r) => r.terminated).length;
}

export const dropSchema = (url: string, schema: string) =>
  adminQuery(url, `drop schema if exists ${schema} cascade`);

/**
 * Storage for `startServer({ storage })` in a schema of its own with the given pool timeouts
 * (the harness's storage keeps the defaults).
 */
export async function boundedStorage(
  url: string,
  timeouts: Partial<DatabaseTimeouts>,
  schema = newSchema(),
): Promise<TestStorage & { schema: string }> {
  const open = () => connect(url, { schema, timeouts });
  const db = await open();
  await migrate(db);
  const opened: Db[] = [db];
  return {
    db,
    url,
    schema,
    reopen: async () => {
      const other = await open();
      opened.push(other);
      return other;
    },
    cleanup: async () => {
      for (const d of opened) await d.close().catch(() => {});
      await dropSchema(url, schema);
    },
  };
}

/**
 * A TCP proxy in front of PostgreSQL that can freeze: while frozen it accepts connections and
 * reads whatever either side sends but passes nothing on, like a database host that stopped
 * answering without closing anything. Thawing delivers what was held back.
 */
export class FreezableProxy {
  #server: Server;
  #frozen = false;
  #held: Array<() => void> = [];
  #sockets = new Set<Socket>();

  private constructor(
    private readonly target: { host: string; port: number },
    server: Server,
  ) {
    this.#server = server;
  }

  static async start(url: string): Promise<FreezableProxy> {
    const parsed = new URL(url);
    const target = { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 5432) };
    const server = createServer();
    const proxy = new FreezableProxy(target, server);
    server.on('connection', (client) => proxy.#accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const parsed = new URL(url);
    const address = this.#server.address();
    parsed.hostname = '127.0.0.1';
    parsed.port = String(typeof address === 'object' && address ? address.port : 0);
    return parsed.toString();
  }

  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    const held = this.#held;
    this.#held = [];
    for (const deliver of held) deliver();
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    const upstream = netConnect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        const deliver = () => {
          if (!to.destroyed) to.write(chunk);
        };
        // Once anything is held back, later chunks queue behind it, in order.
        if (this.#frozen || this.#held.length > 0) this.#held.push(deliver);
        else deliver();
      });
    forward(client, upstream);
    forward(upstream, client);
  }
}

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  output: { stdout: string; stderr: string };
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The demo project's API key id, printed at start. */
  apiKeyId: string;
}

/** The parent's environment without any TESSERA_* or NODE_ENV, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TESSERA_') && name !== 'NODE_ENV' && !name.startsWith('npm_')) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Starts `command` (a `tessera serve` of some kind) and waits until it listens. */
export async function startProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
): Promise<ServerProcess> {
  const child = spawn(command, args, { cwd: root, env: cleanEnv(env), stdio: 'pipe' });
  const output = { stdout: '', stderr: '' };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`no start within 90 s: ${output.stderr}`)), 90_000);
    const check = () => {
      if (output.stdout.includes('Server listening at')) {
        clearTimeout(deadline);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    void exited.then(({ code }) => {
      clearTimeout(deadline);
      reject(new Error(`exited ${code} before listening: ${output.stderr}${output.stdout}`));
    });
  });
  const apiKeyId = /API key id: +(pk_\S+)/.exec(output.stdout)?.[1] ?? '';
  return { child, base: `http://127.0.0.1:${port}`, output, exited, apiKeyId };
}

/** The environment of a served instance for these tests (development outbox, relaxed limits). */
export function serveEnv(port: number, dataDir: string, extra: Record<string, string> = {}) {
  return {
    TESSERA_ENV: 'test',
    TESSERA_PORT: String(port),
    TESSERA_DATA_DIR: dataDir,
    TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
    TESSERA_DELIVERY: 'dev',
    TESSERA_DEMO: 'true',
    TESSERA_LOG_LEVEL: 'info',
    TESSERA_RATE_LIMIT_IP: '100000/60',
    TESSERA_RATE_LIMIT_OTP_START: '100000/900',
    TESSERA_OTP_RESEND_INTERVAL: '0',
    ...extra,
  };
}

/** The pids of every descendant of `pid` (Linux /proc), deepest last. */
export function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    let children: string;
    try {
      children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8');
    } catch {
      return;
    }
    for (const child of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** An OTP sign-in through HTTP against a served instance with the development outbox. */
export async function signInOverHttp(
  base: string,
  apiKeyId: string,
  identifier: string,
): Promise<{ access_token: string; refresh_token: string }> {
  const headers = { 'content-type': 'application/json', api_key_id: apiKeyId };
  const started = await fetch(`${base}/v1/auth/otp/start`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ identifier }),
  });
  if (started.status !== 200) throw new Error(`otp/start answered ${started.status}`);
  const { challenge_id } = (await started.json()) as { challenge_id: string };
  const outbox = (await (await fetch(`${base}/dev/outbox`)).json()) as Array<{ to: string; code: string }>;
  const code = outbox.find((m) => m.to === identifier)?.code;
  const done = await fetch(`${base}/v1/auth/otp/complete`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ challenge_id, code, getOAuthToken: true }),
  });
  if (done.status !== 200) throw new Error(`otp/complete answered ${done.status}`);
  return ((await done.json()) as { oauth_token: { access_token: string; refresh_token: string } })
    .oauth_token;
}
