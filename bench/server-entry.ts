// Child process: a real Tessera server (buildApp + openRuntime, on TESSERA_DATABASE_URL) whose OTP
// delivery hands codes back to the benchmark in a response header instead of sending them. With
// BENCH_COUNT_STATEMENTS=1 it counts the statements it sends to PostgreSQL (one round trip each).
// With BENCH_JOIN=1 it joins the database another Tessera of the bench made (TESSERA_ISSUER is
// that one's, its tokens' `iss`) and creates no project (side-by-side.ts).
// With BENCH_WORKERS=N (N > 1) it is the primary of a cluster as `tessera serve --workers N` is:
// it migrates and creates the project, then N workers serve one port.
import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { onSendHookHandler } from 'fastify';
import pg from 'pg';
import type { Delivery, OtpMessage } from '../packages/server/src/modules/otp/delivery/delivery.js';
import { answerCpuQueries, OTP_CODE_HEADER, type ReadyMessage } from './protocol.js';

// The server as it runs in production, compiled (`npm run bench` builds first): running it from
// TypeScript source through tsx costs some 70 MB of resident memory more and skews the memory
// figure. BENCH_SERVER_FROM=src runs the source instead (no build needed, e.g. when profiling).
const fromSource = process.env.BENCH_SERVER_FROM === 'src';
const base = new URL(fromSource ? '../packages/server/src/' : '../packages/server/dist/', import.meta.url);
if (!existsSync(fileURLToPath(new URL('app.js', base))) && !fromSource)
  throw new Error('packages/server/dist is missing: run `npm run build` (npm run bench does)');
const load = <T>(path: string): Promise<T> =>
  import(new URL(fromSource ? path.replace(/\.js$/, '.ts') : path, base).href) as Promise<T>;
const { buildApp } = await load<typeof import('../packages/server/src/app.js')>('app.js');
const { loadConfig } = await load<typeof import('../packages/server/src/config/index.js')>('config/index.js');
const { openRuntime } = await load<typeof import('../packages/server/src/main.js')>('main.js');
const { normaliseIdentifier } =
  await load<typeof import('../packages/server/src/modules/otp/identifier.js')>('modules/otp/identifier.js');
const { ProjectsRepository } = await load<
  typeof import('../packages/server/src/modules/projects/projects.repository.js')
>('modules/projects/projects.repository.js');
const { ProjectsService } = await load<
  typeof import('../packages/server/src/modules/projects/projects.service.js')
>('modules/projects/projects.service.js');

/** Keeps the last code per recipient until the start response has carried it. */
class BenchDelivery implements Delivery {
  readonly #codes = new Map<string, string>();

  async send(message: OtpMessage): Promise<void> {
    this.#codes.set(message.to, message.code);
  }

  async notify(): Promise<void> {}

  take(to: string): string | undefined {
    const code = this.#codes.get(to);
    this.#codes.delete(to);
    return code;
  }

  async close(): Promise<void> {
    this.#codes.clear();
  }
}

/** Every `query` of a node-postgres client: one round trip to PostgreSQL (BEGIN and COMMIT included). */
function countStatements(): () => number {
  let sent = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    sent++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return () => sent;
}

const config = loadConfig(process.env);
/** Where a sign-in by code starts: the API's route and the hosted pages' form (issue 31). */
const OTP_STARTS = new Set(['/v1/auth/otp/start', '/oauth/sign-in/start']);
const workers = Number(process.env.BENCH_WORKERS ?? '1');
const joining = process.env.BENCH_JOIN === '1';

/** The primary of a cluster: migrate, create the project, fork the workers, report for them. */
async function primary(): Promise<void> {
  const runtime = await openRuntime(config);
  const project = await new ProjectsService(new ProjectsRepository(runtime.db)).create({
    name: 'bench',
    origins: [],
  });
  await runtime.db.close();
  const forked = Array.from({ length: workers }, () => cluster.fork());
  await Promise.all(
    forked.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          worker.once('listening', () => resolve());
          worker.once('exit', (code) => reject(new Error(`a bench worker exited (code ${code})`)));
        }),
    ),
  );
  const stop = () => {
    const force = setTimeout(() => process.exit(1), 3000);
    force.unref();
    let left = forked.length;
    for (const worker of forked) {
      worker.once('exit', () => {
        if (--left === 0) process.exit(0);
      });
      worker.process.kill('SIGTERM');
    }
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
  answerCpuQueries(undefined, () => forked.flatMap((w) => (w.process.pid ? [w.process.pid] : [])));
  const ready: ReadyMessage = { type: 'ready', url: config.issuer, apiKeyId: project.api_key_id };
  process.send?.(ready);
}

/** One serving process: the only one, or a worker of the cluster. */
async function server(): Promise<void> {
  const statements = process.env.BENCH_COUNT_STATEMENTS === '1' ? countStatements() : undefined;
  const runtime = await openRuntime(config, undefined, { migrations: !cluster.isWorker });
  const delivery = new BenchDelivery();
  // The OTP start routes alone get the hook that puts the code in a response header, so every
  // other route (/verify above all) runs exactly as in production, with no hook of the bench's.
  // Both take the identifier as `identifier` (JSON for the API, a form for the hosted page).
  const codeHeader: onSendHookHandler = (request, reply, payload, done) => {
    if (reply.statusCode === 200) {
      const identifier = (request.body as { identifier?: unknown } | undefined)?.identifier;
      const code =
        typeof identifier === 'string' ? delivery.take(normaliseIdentifier(identifier).value) : undefined;
      if (code) reply.header(OTP_CODE_HEADER, code);
    }
    done(null, payload);
  };
  const hooked = new Set<string>();
  const { app, ctx } = await buildApp(config, {
    ...runtime,
    delivery,
    onRoute: (route) => {
      if (route.method !== 'POST' || !OTP_STARTS.has(route.url)) return;
      const own =
        route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
      route.onSend = [...own, codeHeader];
      hooked.add(route.url);
    },
  });
  for (const url of OTP_STARTS)
    if (!hooked.has(url)) throw new Error(`the bench found no route POST ${url} to give the code header`);

  const project =
    cluster.isWorker || joining ? undefined : await ctx.projects.create({ name: 'bench', origins: [] });
  await app.listen({ host: '127.0.0.1', port: config.port });

  let closing = false;
  async function shutdown(): Promise<void> {
    if (closing) return;
    closing = true;
    const force = setTimeout(() => process.exit(1), 3000);
    force.unref();
    try {
      await app.close();
      await runtime.db.close();
    } finally {
      process.exit(0);
    }
  }
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());
  // The parent (or the cluster's primary) went away, even if it was killed: do not outlive it.
  process.once('disconnect', () => void shutdown());
  // A worker's CPU and readiness are reported by the primary.
  if (cluster.isWorker) return;
  answerCpuQueries(statements);
  const ready: ReadyMessage = project
    ? {
        type: 'ready',
        url: config.issuer,
        apiKeyId: project.api_key_id,
        apiKeySecret: project.api_key_secret,
      }
    : { type: 'ready', url: `http://127.0.0.1:${config.port}` };
  process.send?.(ready);
}

await (cluster.isPrimary && workers > 1 ? primary() : server());
