import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import pg from 'pg';
import {
  basicAuth,
  freePort,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
} from '../helpers/harness.js';
import { refreshGrant } from '../helpers/sign-in-methods.js';
import {
  adminQuery,
  boundedStorage,
  dropSchema,
  FreezableProxy,
  newSchema,
  postgresOnly,
  type ServerProcess,
  serveEnv,
  signInOverHttp,
  startProcess,
  terminateBackends,
} from './helpers.js';

/** Pool bounds of the in-process suites, in ms: short, so an outage shows within a test. */
const TIMEOUTS = { connectMs: 1000, statementMs: 1000 };
/** A request during an outage must be answered within this (the bounds above plus slack). */
const ANSWER_WITHIN_MS = 4500;

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

/** A 503 as documented: service_unavailable with Retry-After, nothing of the driver's error. */
function assertUnavailable(answer: TestResponse, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${answer.status} ${answer.text}`);
  assert.equal(answer.headers.get('retry-after'), '5', what);
  assert.doesNotMatch(answer.text, /timeout|terminat|57P0|57014|pg_|select|stack/i, what);
}

/** The OTP guess statement's text as pg_stat_activity shows its start (its `ch` CTE). */
const GUESS_STATEMENT = 'with%ch as (%select identifier,%';

/**
 * A served app on bounded storage of its own (`timeouts`, default TIMEOUTS) for a suite, and a
 * second session that takes locks in its schema (`lock`, in a transaction) and lets them go
 * (`unlock`, a rollback by default). Every connection the suite makes is ended after it, so a
 * failed test leaves no transaction open behind it.
 */
function lockableServer(
  url: string,
  options: {
    timeouts?: Parameters<typeof boundedStorage>[1];
    env?: Record<string, string>;
    now?: () => number;
  } = {},
) {
  let locker: pg.Client | undefined;
  const connections: pg.Client[] = [];
  const suite = {
    storage: undefined as unknown as Awaited<ReturnType<typeof boundedStorage>>,
    server: undefined as unknown as TestServer,
    async lock(statement: string): Promise<void> {
      locker = await suite.connect();
      await locker.query('begin');
      await locker.query(statement);
    },
    /** Another connection to the suite's schema (ended after the suite if not before). */
    async connect(): Promise<pg.Client> {
      const client = new pg.Client({ connectionString: url });
      connections.push(client);
      await client.connect();
      await client.query(`set search_path = ${suite.storage.schema}`);
      return client;
    },
    /** A statement in the transaction holding the lock (before `unlock`). */
    async lockedQuery(statement: string, values: unknown[] = []): Promise<void> {
      await locker?.query(statement, values);
    },
    /**
     * Backends of this database waiting for a lock in a statement whose text is `like` (its start,
     * as pg_stat_activity shows it), and only for one held by backend `blocker` when given:
     * counted until at least `least` wait, or for at most 3 s.
     */
    async lockWaiters(like: string, least = 1, blocker?: number): Promise<number> {
      const count = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'
              and query like ${like}
              and (${blocker ?? null}::int is null or ${blocker ?? null}::int = any(pg_blocking_pids(pid)))`.execute(
            suite.storage.db.kysely,
          )
        ).rows[0]!.n;
      const deadline = Date.now() + 3000;
      let waiting = await count();
      while (waiting < least && Date.now() < deadline) {
        await sleep(20);
        waiting = await count();
      }
      return waiting;
    },
    async unlock(end: 'rollback' | 'commit' = 'rollback'): Promise<void> {
      await locker?.query(end);
      await locker?.end();
      locker = undefined;
    },
  };
  before(async () => {
    suite.storage = await boundedStorage(url, options.timeouts ?? TIMEOUTS);
    suite.server = await startServer('postgres', {
      storage: suite.storage,
      env: options.env ?? RELAXED_LIMITS,
      ...(options.now ? { now: options.now } : {}),
    });
  });
  after(async () => {
    // Ending a client already ended does nothing.
    await Promise.all(connections.map((client) => client.end().catch(() => {})));
    await suite.server.close();
    await suite.storage.cleanup();
  });
  return suite;
}

postgresOnly('PostgreSQL terminates every backend of the pool under load', (url) => {
  const schema = newSchema();
  const applicationName = `tessera_fault_${schema.slice(-12)}`;
  let dir: string;
  let server: ServerProcess;

  before(async () => {
    await adminQuery(url, `create schema ${schema}`);
    const served = new URL(url);
    served.searchParams.set('options', `-c search_path=${schema}`);
    served.searchParams.set('application_name', applicationName);
    dir = mkdtempSync(join(tmpdir(), 'tessera-faults-'));
    const port = await freePort();
    server = await startProcess(
      process.execPath,
      ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts', 'serve'],
      serveEnv(port, dir, {
        TESSERA_DATABASE_URL: served.toString(),
        TESSERA_DATABASE_CONNECT_TIMEOUT: '2',
        TESSERA_DATABASE_STATEMENT_TIMEOUT: '2',
      }),
      port,
    );
  });
  after(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
    await dropSchema(url, schema);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the process survives, in-flight requests get 503 at worst, and the next ones succeed', async () => {
    const { base, apiKeyId } = server;
    const json = { 'content-type': 'application/json' };
    const sessions = await Promise.all(
      Array.from({ length: 6 }, (_, i) => signInOverHttp(base, apiKeyId, `load${i}@example.com`)),
    );
    const statuses = new Map<string, number>();
    const failures: string[] = [];
    const note = (kind: string, response: Response) => {
      const key = `${kind} ${response.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (response.status !== 200 && response.status !== 503) failures.push(key);
      if (response.status === 503 && response.headers.get('retry-after') !== '5')
        failures.push(`${key} without Retry-After`);
    };
    /** One round of a user's traffic: a refresh grant, /verify, a code sent. */
    const round = async (i: number, n: number): Promise<void> => {
      const session = sessions[i]!;
      const refreshed = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          grant_type: 'refresh_token',
          refresh_token: session.refresh_token,
          client_id: apiKeyId,
        }),
      });
      note('refresh', refreshed);
      const body = (await refreshed.json()) as { refresh_token?: string; access_token?: string };
      // A 503 leaves the token as it was (or rotated, then the retry gets the same successor).
      if (refreshed.status === 200) sessions[i] = body as typeof session;
      note(
        'verify',
        await fetch(`${base}/verify`, {
          method: 'POST',
          headers: { ...json, api_key_id: apiKeyId },
          body: JSON.stringify({ oauth_token: { access_token: sessions[i]!.access_token } }),
        }),
      );
      note(
        'otp/start',
        await fetch(`${base}/v1/auth/otp/start`, {
          method: 'POST',
          headers: { ...json, api_key_id: apiKeyId },
          body: JSON.stringify({ identifier: `round${i}.${n}@example.com` }),
        }),
      );
    };

    let running = true;
    const workers = sessions.map(async (_, i) => {
      for (let n = 0; running; n++) await round(i, n);
    });
    let terminated = 0;
    for (let wave = 0; wave < 4; wave++) {
      await sleep(400);
      terminated += await terminateBackends(url, applicationName);
    }
    await sleep(800);
    running = false;
    await Promise.all(workers).catch((error: Error) => {
      throw new Error(
        `a request failed at the socket (exit status ${server.child.exitCode}): ${error.message}\n${server.output.stderr}`,
      );
    });

    assert.ok(terminated > 0, 'no backend of the pool was terminated');
    assert.equal(server.child.exitCode, null, `the server exited: ${server.output.stderr}`);
    assert.deepEqual(failures, [], `answers: ${JSON.stringify([...statuses])}`);
    // Requests after the terminations all succeed, at the first try.
    for (let i = 0; i < sessions.length; i++) {
      const before = new Map(statuses);
      await round(i, 1_000_000);
      for (const kind of ['refresh', 'verify', 'otp/start'])
        assert.equal(
          (statuses.get(`${kind} 200`) ?? 0) - (before.get(`${kind} 200`) ?? 0),
          1,
          `${kind} after the terminations: ${JSON.stringify([...statuses])}`,
        );
    }
    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    // The loss was logged at warn, with the SQLSTATE and PostgreSQL's own words only.
    const lost = server.output.stdout
      .split('\n')
      .filter((line) => line.includes('database connection lost'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(lost.length > 0, 'no connection loss was logged');
    assert.ok(lost.every((entry) => entry.level === 40));
    assert.ok(
      lost.some((entry) => entry.code === '57P01'),
      JSON.stringify(lost[0]),
    );
    assert.ok(
      lost.every((entry) =>
        Object.keys(entry).every((k) => ['level', 'time', 'service', 'code', 'reason', 'msg'].includes(k)),
      ),
      JSON.stringify(lost[0]),
    );
    assert.doesNotMatch(server.output.stdout, /tsr_|"unexpected error"/);
  });
});

postgresOnly('PostgreSQL stalls: a table lock held by another session', (url) => {
  const suite = lockableServer(url);

  test('requests fail with 503 within the statement timeout, /readyz says not ready, /healthz stays 200, and all recovers', async () => {
    const { server } = suite;
    const bundle = await server.signIn('stall@example.com');
    const refresh = () => refreshGrant(server, bundle.refresh_token);
    const verify = () =>
      server.request('POST', '/verify', {
        body: { oauth_token: { access_token: bundle.access_token } },
        headers: { api_key_id: server.project.api_key_id },
      });
    assert.equal((await verify()).body.success, true);

    await suite.lock(
      'lock table sessions, refresh_tokens, session_revocations, otp_challenges in access exclusive mode',
    );

    const [refreshed, ready, health, verified] = await Promise.all([
      timed(refresh()),
      timed(server.request('GET', '/readyz')),
      timed(server.request('GET', '/healthz')),
      timed(verify()),
    ]);
    assertUnavailable(refreshed.value, 'refresh grant');
    assert.equal(refreshed.value.body.error, 'temporarily_unavailable');
    assert.ok(refreshed.ms < ANSWER_WITHIN_MS, `refresh answered after ${refreshed.ms} ms`);
    assert.equal(ready.value.status, 503);
    assert.equal(ready.value.body.code, 'service_unavailable');
    assert.ok(ready.ms < 2_500, `/readyz answered after ${ready.ms} ms`);
    assert.equal(health.value.status, 200);
    assert.ok(health.ms < 500, `/healthz answered after ${health.ms} ms`);
    // A token verified before answers from memory (revocations trusted past their last good read).
    assert.equal(verified.value.status, 200);
    assert.equal(verified.value.body.success, true);
    const started = await timed(
      server.request('POST', '/v1/auth/otp/start', {
        body: { identifier: 'stall2@example.com' },
        headers: { api_key_id: server.project.api_key_id },
      }),
    );
    assertUnavailable(started.value, 'otp/start');
    assert.equal(started.value.body.code, 'service_unavailable');
    assert.ok(started.ms < ANSWER_WITHIN_MS, `otp/start answered after ${started.ms} ms`);

    await suite.unlock();
    // No restart: the same token refreshes (the failed attempt changed nothing), and it is ready.
    const after = await refresh();
    assert.equal(after.status, 200, after.text);
    assert.equal((await server.request('GET', '/readyz')).status, 200);
  });
});

postgresOnly('PostgreSQL stops answering: the network to it freezes', (url) => {
  let proxy: FreezableProxy;
  let storage: Awaited<ReturnType<typeof boundedStorage>>;
  let server: TestServer;

  before(async () => {
    proxy = await FreezableProxy.start(url);
    storage = await boundedStorage(proxy.urlFor(url), TIMEOUTS);
    server = await startServer('postgres', { storage, env: RELAXED_LIMITS });
  });
  after(async () => {
    proxy.thaw();
    await server.close();
    await storage.cleanup();
    await proxy.close();
  });

  test('nothing hangs past its bound, /verify answers cached tokens from memory, and service resumes', async () => {
    const bundle = await server.signIn('frozen@example.com');
    const verify = () =>
      server.request('POST', '/verify', {
        body: { oauth_token: { access_token: bundle.access_token } },
        headers: { api_key_id: server.project.api_key_id },
      });
    assert.equal((await verify()).body.success, true);

    proxy.freeze();
    const outageStarted = performance.now();
    // /verify keeps answering from memory, from the first moment of the outage (while the reads
    // in flight hang) to well past the project cache's 5 s, within the grace: never waiting for a
    // read that will only fail at its timeout (here 1 s; STALE_READ_PATIENCE_MS is 100 ms).
    const probing = (async () => {
      let slowest = 0;
      while (performance.now() - outageStarted < 8_000) {
        const verified = await timed(verify());
        assert.equal(verified.value.status, 200, verified.value.text);
        assert.equal(verified.value.body.success, true);
        slowest = Math.max(slowest, verified.ms);
        await sleep(50);
      }
      return slowest;
    })();
    const [refreshed, ready, health, signIn] = await Promise.all([
      timed(
        server.request('POST', '/oauth/token', {
          body: {
            grant_type: 'refresh_token',
            refresh_token: bundle.refresh_token,
            client_id: server.project.api_key_id,
          },
        }),
      ),
      timed(server.request('GET', '/readyz')),
      timed(server.request('GET', '/healthz')),
      timed(
        server.request('POST', '/v1/auth/otp/start', {
          body: { identifier: 'frozen2@example.com' },
          headers: { api_key_id: server.project.api_key_id },
        }),
      ),
    ]);
    assertUnavailable(refreshed.value, 'refresh grant');
    assert.ok(refreshed.ms < ANSWER_WITHIN_MS, `refresh answered after ${refreshed.ms} ms`);
    assertUnavailable(signIn.value, 'otp/start');
    assert.ok(signIn.ms < ANSWER_WITHIN_MS, `otp/start answered after ${signIn.ms} ms`);
    assert.equal(ready.value.status, 503);
    assert.ok(ready.ms < 2_500, `/readyz answered after ${ready.ms} ms`);
    assert.equal(health.value.status, 200);
    assert.ok(health.ms < 500, `/healthz answered after ${health.ms} ms`);
    const jwks = await timed(server.request('GET', '/.well-known/jwks.json'));
    assert.equal(jwks.value.status, 200);
    assert.ok(jwks.ms < 500);

    const slowest = await probing;
    assert.ok(slowest < 800, `a /verify during the outage took ${slowest} ms`);

    proxy.thaw();
    const deadline = performance.now() + 10_000;
    let ready2 = await server.request('GET', '/readyz');
    while (ready2.status !== 200 && performance.now() < deadline) {
      await sleep(200);
      ready2 = await server.request('GET', '/readyz');
    }
    assert.equal(ready2.status, 200, 'not ready again after the database came back');
    const again = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'frozen3@example.com' },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.equal(again.status, 200, again.text);
  });
});

postgresOnly('PostgreSQL: the grace window of a grant that took effect late is timed from then', (url) => {
  const clock = { t: Date.now() };
  const suite = lockableServer(url, {
    timeouts: { connectMs: 1000, statementMs: 5000 },
    env: { ...RELAXED_LIMITS, TESSERA_REFRESH_GRACE: '3' },
    now: () => clock.t,
  });

  test('a retry soon after the rotation took effect gets the same successor, however long the grant waited', async () => {
    const { server } = suite;
    const bundle = await server.signIn('late-grant@example.com');
    const refresh = () => refreshGrant(server, bundle.refresh_token);
    // Another session holds the token rows: the grant waits 2.5 s for them, then takes effect.
    await suite.lock('select id from refresh_tokens for update');
    const granting = refresh();
    await sleep(2500);
    await suite.unlock('commit');
    const first = await granting;
    assert.equal(first.status, 200, first.text);
    // Its answer is lost; the client retries 4 s after the grant began on the server's clock, which
    // is 1.5 s after the rotation took effect: inside the 3 s window, so the same successor. Timed
    // from the beginning of the grant it was reuse, and the session was revoked.
    clock.t += 4000;
    const retry = await refresh();
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.refresh_token, first.body.refresh_token);
    // Past the window from when it took effect, it is reuse.
    clock.t += 3000;
    const late = await refresh();
    assert.equal(late.status, 400, late.text);
    assert.match(late.text, /already used/);
  });
});

postgresOnly('PostgreSQL: an OTP code whose sign-in could not be stored', (url) => {
  const suite = lockableServer(url);

  test('is finished by the retry the 503 asked for, once: the code is not lost', async () => {
    const { server, storage } = suite;
    const headers = { api_key_id: server.project.api_key_id };
    const email = 'resume@example.com';
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: email },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const body = {
      challenge_id: started.body.challenge_id,
      code: server.lastCode(email),
      getOAuthToken: true,
    };
    const complete = () => server.request('POST', '/v1/auth/otp/complete', { body, headers });
    // A webhook taking user.created: the event is then stored on its own, before the session.
    const hook = await server.request('POST', '/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['user.created'] },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(hook.status, 201, hook.text);

    // The code's statement (challenge, budgets, user) commits; the session's then times out.
    await suite.lock('lock table sessions in access exclusive mode');
    assertUnavailable(await complete(), 'complete while sessions are locked');
    await suite.unlock();

    // A wrong code against this challenge, which can still be finished, is a guess: its three
    // budget units stay spent (the challenge has no attempts left to count it).
    const counted = async () =>
      Number(
        (
          await storage.db.kysely
            .selectFrom('rate_limits')
            .select((eb) => eb.fn.sum<number>('count').as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await counted();
    const guessed = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...body, code: body.code === '000000' ? '111111' : '000000' },
      headers,
    });
    assert.equal(guessed.body.code, 'challenge_used', guessed.text);
    assert.equal((await counted()) - before, 3);

    // The retry signs in (the code was right and its sign-in never stored)...
    const retried = await complete();
    assert.equal(retried.status, 200, retried.text);
    const { access_token } = retried.body.oauth_token;
    const verified = await server.request('POST', '/verify', {
      body: { oauth_token: { access_token } },
      headers,
    });
    assert.equal(verified.body.success, true, verified.text);
    // ...once: the challenge has started its session, and the code stays used.
    const again = await complete();
    assert.equal(again.status, 400, again.text);
    assert.equal(again.body.code, 'challenge_used');
    const sessions = await storage.db.kysely.selectFrom('sessions').select('id').execute();
    assert.equal(sessions.length, 1);
    // The user was created by the code's statement; its user.created event, lost with the
    // session's, is recorded by the retry, once.
    const events = await storage.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'user_id'])
      .where('type', 'in', ['user.created', 'signin.succeeded'])
      .execute();
    const userId = decodeJwt(access_token).sub;
    assert.deepEqual(events.map((e) => [e.type, e.user_id]).sort(), [
      ['signin.succeeded', userId],
      ['user.created', userId],
    ]);

    // A code used without tokens (getOAuthToken false) finished its challenge: asking for tokens
    // with it afterwards starts no session.
    const other = 'resume-no-token@example.com';
    const again2 = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: other },
      headers,
    });
    const plain = { challenge_id: again2.body.challenge_id, code: server.lastCode(other) };
    const first = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...plain, getOAuthToken: false },
      headers,
    });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.oauth_token, undefined);
    const tokens = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...plain, getOAuthToken: true },
      headers,
    });
    assert.equal(tokens.body.code, 'challenge_used', tokens.text);
    assert.equal((await storage.db.kysely.selectFrom('sessions').select('id').execute()).length, 1);
    // A wrong code for the used challenge is not a way in either.
    const wrong = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...body, code: body.code === '000000' ? '111111' : '000000' },
      headers,
    });
    assert.equal(wrong.body.code, 'challenge_used', wrong.text);
  });
});

postgresOnly('PostgreSQL: an OTP sign-in stored by the guess statement itself', (url) => {
  const suite = lockableServer(url);

  test('is stored whole or not at all: a 503 spends no try, and the retry signs in once', async () => {
    const { server, storage } = suite;
    const headers = { api_key_id: server.project.api_key_id };
    const email = 'whole@example.com';
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: email },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const challengeId = started.body.challenge_id as string;
    const body = { challenge_id: challengeId, code: server.lastCode(email), getOAuthToken: true };
    const complete = () => server.request('POST', '/v1/auth/otp/complete', { body, headers });
    const challenge = () =>
      storage.db.kysely
        .selectFrom('otp_challenges')
        .select(['attempts', 'consumed_at', 'expires_at'])
        .where('id', '=', challengeId)
        .executeTakeFirstOrThrow();
    const before = await challenge();

    // No webhook takes the sign-in's events: the right code's statement writes the session too,
    // so a session table it cannot write to fails the code's statement as a whole.
    await suite.lock('lock table sessions in access exclusive mode');
    assertUnavailable(await complete(), 'complete while sessions are locked');
    await suite.unlock();
    assert.deepEqual(await challenge(), before);
    assert.equal((await storage.db.kysely.selectFrom('users').select('id').execute()).length, 0);

    const signedIn = await complete();
    assert.equal(signedIn.status, 200, signedIn.text);
    const after = await challenge();
    assert.equal(after.attempts, before.attempts + 1);
    assert.equal(after.expires_at, after.consumed_at);
    const again = await complete();
    assert.equal(again.body.code, 'challenge_used', again.text);
    assert.equal((await storage.db.kysely.selectFrom('sessions').select('id').execute()).length, 1);
    const events = await storage.db.kysely
      .selectFrom('audit_events')
      .select('type')
      .where('type', 'in', ['user.created', 'signin.succeeded'])
      .execute();
    assert.deepEqual(events.map((e) => e.type).sort(), ['signin.succeeded', 'user.created']);
  });
});

postgresOnly('PostgreSQL: two OTP sign-ins racing to lift one PIN lock', (url) => {
  // Statements wait here for a lock the test holds: a longer bound than the outage tests'.
  const suite = lockableServer(url, { timeouts: { connectMs: 1000, statementMs: 5000 } });

  test('both sign in, and the lock is lifted, and recorded, once', async () => {
    const { server, storage } = suite;
    const headers = { api_key_id: server.project.api_key_id };
    const email = 'two-unlocks@example.com';
    const start = async () => {
      const started = await server.request('POST', '/v1/auth/otp/start', {
        body: { identifier: email },
        headers,
      });
      assert.equal(started.status, 200, started.text);
      return { challenge_id: started.body.challenge_id as string, code: server.lastCode(email) };
    };
    const first = await start();
    const signedIn = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...first, getOAuthToken: false },
      headers,
    });
    assert.equal(signedIn.status, 200, signedIn.text);
    const userId = signedIn.body.user_id as string;
    const now = Date.now();
    await storage.db.kysely
      .insertInto('pins')
      .values({ user_id: userId, hash: 'x', failed_attempts: 5, locked_at: now, updated_at: now })
      .execute();
    const a = await start();
    const b = await start();

    // Both statements start, with snapshots that show the PIN locked, while its row is held: the
    // first waits for the PIN's row, the second for the user's row the first has upserted.
    await suite.lock('select * from pins for update');
    const completing = [a, b].map((body) =>
      server.request('POST', '/v1/auth/otp/complete', { body: { ...body, getOAuthToken: true }, headers }),
    );
    assert.ok((await suite.lockWaiters(GUESS_STATEMENT, 2)) >= 2, 'both statements wait behind the held row');
    await suite.unlock();
    for (const answer of await Promise.all(completing)) assert.equal(answer.status, 200, answer.text);

    const unlocked = await storage.db.kysely
      .selectFrom('audit_events')
      .select('type')
      .where('user_id', '=', userId)
      .where('type', '=', 'pin.unlocked')
      .execute();
    assert.equal(unlocked.length, 1);
    const pin = await storage.db.kysely
      .selectFrom('pins')
      .select(['failed_attempts', 'locked_at'])
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(pin, { failed_attempts: 0, locked_at: null });
  });
});

postgresOnly('PostgreSQL: a right code counted in a guess budget, in the one statement', (url) => {
  const suite = lockableServer(url, {
    timeouts: { connectMs: 1000, statementMs: 5000 },
    env: { ...RELAXED_LIMITS, TESSERA_RATE_LIMIT_OTP_GUESSES: '2/900' },
  });

  test('signs in, gives its units back beside the answer, and shutdown waits for them', async () => {
    const { server, storage } = suite;
    const headers = { api_key_id: server.project.api_key_id };
    const email = 'counted@example.com';
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: email },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const code = server.lastCode(email);
    const wrong = code === '000000' ? '111111' : '000000';
    const body = { challenge_id: started.body.challenge_id as string, code, getOAuthToken: true };
    // The start's own windows are there already: the guess budgets are the rows the guesses add.
    const startKeys = (await storage.db.kysely.selectFrom('rate_limits').select('key').execute()).map(
      (r) => r.key,
    );
    for (let i = 0; i < 2; i++) {
      const guessed = await server.request('POST', '/v1/auth/otp/complete', {
        body: { ...body, code: wrong },
        headers,
      });
      assert.equal(guessed.body.code, 'invalid_code', guessed.text);
    }
    // Not the per-IP windows (60 s here), which the server shares in the same table every second.
    const guessRows = () =>
      storage.db.kysely
        .selectFrom('rate_limits')
        .select(['key', 'count'])
        .where('key', 'not in', startKeys)
        .where('reset_at', '>', Date.now() + 120_000)
        .execute();
    const counts = async () => (await guessRows()).map((r) => Number(r.count));
    const guessKeys = (await guessRows()).map((r) => r.key);
    const guessCounts = async () =>
      (
        await storage.db.kysely
          .selectFrom('rate_limits')
          .select('count')
          .where('key', 'in', guessKeys)
          .orderBy('key')
          .execute()
      ).map((r) => Number(r.count));
    assert.deepEqual(await counts(), [2, 2, 2]);

    // The network budget is spent as the statement's snapshot reads it (the code is not `free`);
    // a unit given back meanwhile (committed while the statement waits for the window's row) lets
    // the right code in, counted.
    await suite.lock('select * from rate_limits for update');
    // The same user signing in elsewhere, not committed yet: once the guess statement holds the
    // windows' rows, it waits for this at its user insert, still holding them.
    const elsewhere = await suite.connect();
    await elsewhere.query('begin');
    await elsewhere.query(
      `insert into users (id, project_id, identifier, identifier_type, created_at, last_sign_in_at)
        values ('elsewhere', $1, $2, 'email', 0, 0)`,
      [server.project.project_id, email],
    );
    const completing = server.request('POST', '/v1/auth/otp/complete', { body, headers });
    assert.equal(await suite.lockWaiters(GUESS_STATEMENT), 1, 'the guess statement waits for the windows');
    const holder = await suite.connect();
    await suite.lockedQuery('update rate_limits set count = count - 1 where key = any($1)', [guessKeys]);
    await suite.unlock('commit');
    // A second connection asks for the windows' rows while the guess statement holds them (it
    // waits for the user's row by then): it is queued behind that statement, ahead of the refund
    // that follows the answer. Asked any earlier, it could take a row the statement has not
    // locked again yet, and the statement would wait for it in turn.
    const elsewherePid = (await elsewhere.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!
      .pid;
    assert.equal(
      await suite.lockWaiters(GUESS_STATEMENT, 1, elsewherePid),
      1,
      'the guess statement holds the windows and waits for the user',
    );
    const keys = guessKeys.map((k) => `'${k.replaceAll("'", "''")}'`).join(', ');
    const holding = holder.query(`begin; select 1 from rate_limits where key in (${keys}) for update`);
    assert.equal(await suite.lockWaiters('begin; select 1 from rate_limits%'), 1, 'the holder queues');
    await elsewhere.query('rollback');
    const signedIn = await completing;
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.ok(signedIn.body.oauth_token.access_token);
    await holding;
    // Answered while the refund waits for the held rows: counted (1 + 1 each), not yet given back.
    assert.equal(await suite.lockWaiters('%count - 1%'), 1, 'the refund waits for the held rows');
    assert.deepEqual(await guessCounts(), [2, 2, 2]);
    // Shutting down waits for it, storage still open: the units are back once closed.
    let closed = false;
    const closing = server.close().then(() => {
      closed = true;
    });
    await sleep(300);
    assert.equal(closed, false, 'the app closed with a refund still running');
    await holder.query('commit');
    await closing;
    assert.deepEqual(await guessCounts(), [1, 1, 1]);
  });
});
