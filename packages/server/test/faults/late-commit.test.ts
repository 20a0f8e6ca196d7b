import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { RELAXED_LIMITS, startServer, type TestResponse, type TestServer } from '../helpers/harness.js';
import { refreshGrant } from '../helpers/sign-in-methods.js';
import { boundedStorage, postgresOnly } from './helpers.js';

/**
 * Issue 34, item 1: a refresh rotation whose commit lands long after its grant answered 503 (a
 * database that froze, a commit waiting for a synchronous standby). The client retries the same
 * token as the docs say; that retry must not be taken for theft.
 *
 * The stall: a deferred constraint trigger on refresh_tokens, in this suite's own schema, makes
 * every updating commit wait for an advisory lock that the test holds (a unique key). It swallows
 * statement_timeout's cancellation and goes on waiting, as a commit waiting for a standby does,
 * so the rotation commits when the test lets go of the lock: STALL_MS after the grant began.
 */
const STALL_MS = 40_000;
const SESSIONS = 3;

postgresOnly('PostgreSQL: a refresh rotation that commits 40 s after its 503', (url) => {
  let storage: Awaited<ReturnType<typeof boundedStorage>>;
  let server: TestServer;
  const lockKey = randomInt(1, 2 ** 31 - 1);
  let holder: pg.Client;

  before(async () => {
    // The server's bounds as shipped: 5 s statements (the client gives up at 6 s), a 30 s grace.
    storage = await boundedStorage(url, { connectMs: 5000, statementMs: 5000 });
    server = await startServer('postgres', {
      storage,
      env: { ...RELAXED_LIMITS, TESSERA_REFRESH_GRACE: '30' },
    });
    holder = new pg.Client({ connectionString: url });
    await holder.connect();
  });
  after(async () => {
    await holder.end().catch(() => {});
    await server.close();
    await storage.cleanup();
  });

  async function stallCommits(): Promise<void> {
    await holder.query('select pg_advisory_lock($1)', [lockKey]);
    await sql
      .raw(
        `create function ${storage.schema}.stall_commit() returns trigger language plpgsql as $$
        begin
          loop
            begin
              perform pg_advisory_lock_shared(${lockKey});
              perform pg_advisory_unlock_shared(${lockKey});
              exit;
            exception when query_canceled then
              -- statement_timeout does not end a commit's wait for a standby either
            end;
          end loop;
          return null;
        end $$;
        create constraint trigger stall_commit after update on ${storage.schema}.refresh_tokens
          deferrable initially deferred for each row execute function ${storage.schema}.stall_commit();`,
      )
      .execute(storage.db.kysely);
  }

  async function endStall(): Promise<void> {
    await holder.query('select pg_advisory_unlock($1)', [lockKey]);
    await sql.raw(`drop trigger stall_commit on ${storage.schema}.refresh_tokens`).execute(storage.db.kysely);
  }

  /** The documented client: on 503, wait Retry-After and send the same token again. */
  async function refreshAsDocumented(token: string, statuses: number[]): Promise<TestResponse> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const answer = await refreshGrant(server, token);
      statuses.push(answer.status);
      if (answer.status !== 503) return answer;
      await sleep(Number(answer.headers.get('retry-after') ?? '5') * 1000);
    }
    throw new Error('still 503 after 20 tries');
  }

  test('the retries get the successor: no session revoked, no reuse recorded, the successor works', async () => {
    const bundles = [];
    // One at a time: the harness reads each code from the outbox.
    for (let i = 0; i < SESSIONS; i++) bundles.push(await server.signIn(`stall${i}@example.com`));
    await stallCommits();
    const statuses: number[][] = bundles.map(() => []);
    const answers = bundles.map((b, i) => refreshAsDocumented(b.refresh_token, statuses[i]!));
    await sleep(STALL_MS);
    await endStall();
    const settled = await Promise.all(answers);

    for (const [i, answer] of settled.entries()) {
      // Each first grant answered 503 (its commit stalled), then a retry got the tokens.
      assert.equal(statuses[i]![0], 503, `session ${i}: ${statuses[i]}`);
      assert.equal(answer.status, 200, `session ${i}: ${answer.text}`);
      // The successor the late commit created is the one handed out, and it works.
      const next = await refreshGrant(server, answer.body.refresh_token);
      assert.equal(next.status, 200, `session ${i}, successor: ${next.text}`);
      const verified = await server.request('POST', '/verify', {
        body: { oauth_token: { access_token: next.body.access_token } },
        headers: { api_key_id: server.project.api_key_id },
      });
      assert.equal(verified.status, 200, verified.text);
    }
    const { rows } = await sql<{ revoked: number; reuse: number }>`select
        (select count(*)::int from sessions where revoked_at is not null) as revoked,
        (select count(*)::int from audit_events where type = 'refresh.reuse_detected') as reuse`.execute(
      storage.db.kysely,
    );
    console.log(`# ${STALL_MS / 1000} s commit stall: ${rows[0]!.revoked} of ${SESSIONS} sessions revoked`);
    assert.deepEqual(rows[0], { revoked: 0, reuse: 0 });
  });

  test('a thief on another client replaying the rotated token is still caught', async () => {
    const bundle = await server.signIn('stall-thief@example.com');
    const first = await refreshGrant(server, bundle.refresh_token);
    assert.equal(first.status, 200, first.text);
    const theft = await refreshGrant(server, bundle.refresh_token, { 'user-agent': 'another client' });
    assert.equal(theft.status, 400, theft.text);
    assert.match(theft.text, /already used/);
  });
});
