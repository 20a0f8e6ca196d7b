import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { hmac } from '../../src/crypto/hash.js';
import { randomUUID } from '../../src/crypto/random.js';
import type { Db } from '../../src/db/connect.js';
import { type GuessBudget, OtpRepository } from '../../src/modules/otp/otp.repository.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { rateLimitKey } from '../../src/modules/rate-limits/rate-limits.repository.js';
import { SessionRepository } from '../../src/modules/session/session.repository.js';
import { createStorage, describePostgres, type TestStorage } from '../helpers/harness.js';

/**
 * A rotation's time as the grant's `now`: PostgreSQL stamps the grant's start plus the few ms its
 * statement waited before it had its row (session.repository.ts, `tookEffect`).
 */
const atGrant = (at: number | null | undefined, start: number) =>
  typeof at === 'number' && at >= start && at < start + 5000 ? start : at;

/** `n` calls spread over the connections of `dbs`, all started at once. */
function spread<T>(n: number, dbs: Db[], call: (db: Db, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => call(dbs[i % dbs.length]!, i)));
}

// The statements that do in one round trip on PostgreSQL what SQLite does in several: the same
// invariants as the step-by-step versions (test/storage/store.test.ts), under concurrency.
describePostgres('one-statement hot paths [postgres]', () => {
  let storage: TestStorage;
  let dbs: Db[];
  let projectId: string;
  const now = Date.UTC(2030, 0, 1);
  const key = randomBytes(32);

  beforeEach(async () => {
    storage = await createStorage('postgres');
    dbs = [storage.db, await storage.reopen(), await storage.reopen()];
    const project = await new ProjectsService(new ProjectsRepository(storage.db), () => now).create({
      name: 'p',
    });
    projectId = project.project_id;
  });
  afterEach(() => storage.cleanup());

  async function newChallenge(identifier: string, code: string, maxAttempts: number): Promise<string> {
    const id = `otp_${randomBytes(16).toString('base64url')}`;
    await new OtpRepository(storage.db).insert({
      id,
      project_id: projectId,
      identifier,
      channel: identifier.startsWith('+') ? 'sms' : 'email',
      code_hash: hmac(key, id, code),
      max_attempts: maxAttempts,
      created_at: now,
      expires_at: now + 300_000,
      consumed_at: null,
    });
    return id;
  }

  const budgets = (network: string, limits = { network: 100, everywhere: 100 }) => ({
    network: {
      scope: 'otp-guess',
      head: `${projectId}\0`,
      tail: `\0${network}`,
      limit: limits.network,
      resetAt: now + 900_000,
    } satisfies GuessBudget,
    day: {
      scope: 'otp-guess-day',
      head: `${projectId}\0`,
      tail: `\0${network}`,
      limit: 100_000,
      resetAt: now + 86_400_000,
    } satisfies GuessBudget,
    everywhere: {
      scope: 'otp-guess-all',
      head: `${projectId}\0`,
      tail: '',
      limit: limits.everywhere,
      resetAt: now + 86_400_000,
    } satisfies GuessBudget,
  });

  const guess = (
    db: Db,
    id: string,
    code: string,
    network = '192.0.2.1',
    limits?: Parameters<typeof budgets>[1],
  ) =>
    new OtpRepository(db).guess(
      projectId,
      id,
      hmac(key, id, code),
      now,
      budgets(network, limits),
      randomUUID(),
    );

  test('the budgets are counted under the rate limiter’s own keys (hashed by PostgreSQL)', async () => {
    for (const identifier of ['zoë.ünïcode@exämple.com', '+14155550100']) {
      const id = await newChallenge(identifier, '123456', 5);
      const result = await guess(storage.db, id, '000000', '2001:db8::/64');
      assert.equal(result.identifier, identifier);
      assert.deepEqual(result.attempt, { attempts: 1, maxAttempts: 5, matched: false });
      const rows = await storage.db.kysely.selectFrom('rate_limits').select(['key', 'count']).execute();
      const count = (k: string) => rows.find((r) => r.key === k)?.count;
      assert.equal(count(rateLimitKey('otp-guess', `${projectId}\0${identifier}\0${'2001:db8::/64'}`)), 1);
      assert.equal(count(rateLimitKey('otp-guess-all', `${projectId}\0${identifier}`)), 1);
      await storage.db.kysely.deleteFrom('rate_limits').execute();
    }
  });

  test('an unknown challenge, or one of another project, counts nothing', async () => {
    const id = await newChallenge('ada@example.com', '123456', 5);
    const unknown = await guess(storage.db, 'otp_unknown', '123456');
    assert.deepEqual(unknown, {});
    const foreign = await new OtpRepository(storage.db).guess(
      randomUUID(),
      id,
      hmac(key, id, '123456'),
      now,
      budgets('192.0.2.1'),
      randomUUID(),
    );
    assert.deepEqual(foreign, {});
    assert.deepEqual(await storage.db.kysely.selectFrom('rate_limits').selectAll().execute(), []);
  });

  test('parallel wrong guesses take exactly max_attempts tries', async () => {
    const id = await newChallenge('ada@example.com', '123456', 5);
    const results = await spread(30, dbs, (db) => guess(db, id, '000000'));
    const taken = results.flatMap((r) => (r.attempt ? [r.attempt] : []));
    assert.deepEqual(
      taken.map((a) => a.attempts).sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
    );
    assert.ok(taken.every((a) => !a.matched && a.maxAttempts === 5));
    assert.ok(results.every((r) => r.signedIn === undefined));
    // Every guess was counted in both budgets (none was refused; the caller refunds the others).
    assert.deepEqual(
      results.map((r) => r.network?.count).sort((a, b) => a! - b!),
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
  });

  test('parallel guesses pass a budget exactly `limit` times, counted from a window nobody had opened', async () => {
    const id = await newChallenge('ada@example.com', '123456', 1000);
    const results = await spread(40, dbs, (db) =>
      guess(db, id, '000000', '192.0.2.1', { network: 7, everywhere: 4 }),
    );
    const passedNetwork = results.filter((r) => r.network!.count <= 7);
    assert.equal(passedNetwork.length, 7);
    // The identifier-wide budget is counted only for the guesses the network budget let through,
    // and an attempt is taken only for those both let through.
    assert.ok(results.every((r) => (r.everywhere !== undefined) === r.network!.count <= 7));
    assert.deepEqual(
      passedNetwork.map((r) => r.everywhere!.count).sort((a, b) => a - b),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.equal(results.filter((r) => r.attempt).length, 4);
    for (const r of results) assert.equal(r.attempt !== undefined, (r.everywhere?.count ?? 99) <= 4);
  });

  test('of parallel right guesses exactly one signs in; the user is created once', async () => {
    for (const identifier of ['ada@example.com', '+14155550100']) {
      const id = await newChallenge(identifier, '123456', 5);
      const results = await spread(20, dbs, (db) => guess(db, id, '123456'));
      const winners = results.filter((r) => r.signedIn);
      assert.equal(winners.length, 1);
      const { user, pin, claims } = winners[0]!.signedIn!;
      assert.equal(user.identifier, identifier);
      assert.equal(user.identifier_type, identifier.startsWith('+') ? 'phone' : 'email');
      assert.equal(user.last_sign_in_at, now);
      assert.equal(pin, null);
      assert.deepEqual(claims, {});
      const challenge = await new OtpRepository(storage.db).find(projectId, id);
      assert.equal(challenge?.consumed_at, now);
      // A second sign-in finds the same user, with its PIN and custom claims.
      await storage.db.kysely
        .insertInto('pins')
        .values({ user_id: user.id, hash: 'h', failed_attempts: 2, locked_at: now, updated_at: now })
        .execute();
      await storage.db.kysely
        .insertInto('user_claims')
        .values({ user_id: user.id, project_id: projectId, claims: '{"role":"admin"}', updated_at: now })
        .execute();
      const again = await guess(storage.db, await newChallenge(identifier, '654321', 5), '654321');
      assert.equal(again.signedIn?.user.id, user.id);
      assert.deepEqual(again.signedIn?.pin, { failedAttempts: 2, locked: true });
      assert.deepEqual(again.signedIn?.claims, { role: 'admin' });
      const users = await storage.db.kysely
        .selectFrom('users')
        .select('id')
        .where('identifier', '=', identifier)
        .execute();
      assert.equal(users.length, 1);
    }
  });

  test('a right code within the budgets is counted in none of them; a wrong one in all three', async () => {
    const rows = () => storage.db.kysely.selectFrom('rate_limits').select(['key', 'count']).execute();
    const right = await newChallenge('ada@example.com', '123456', 5);
    const signedIn = await guess(storage.db, right, '123456');
    assert.equal(signedIn.free, true);
    assert.ok(signedIn.signedIn);
    assert.equal(signedIn.network, undefined);
    assert.deepEqual(await rows(), []);
    const wrong = await guess(storage.db, await newChallenge('ada@example.com', '123456', 5), '000000');
    assert.equal(wrong.free, undefined);
    assert.equal(wrong.network?.count, 1);
    assert.deepEqual(
      (await rows()).map((r) => r.count),
      [1, 1, 1],
    );
    // A right code for a challenge that is no longer open (used) is counted like any guess.
    const again = await guess(storage.db, right, '123456');
    assert.equal(again.free, undefined);
    assert.equal(again.network?.count, 2);
  });

  test('a right code when a budget is spent is counted and refused like a wrong one', async () => {
    const limits = { network: 2, everywhere: 100 };
    for (let i = 0; i < 2; i++)
      await guess(
        storage.db,
        await newChallenge('ada@example.com', '123456', 5),
        '000000',
        '192.0.2.1',
        limits,
      );
    const id = await newChallenge('ada@example.com', '123456', 5);
    const right = await guess(storage.db, id, '123456', '192.0.2.1', limits);
    const wrong = await guess(storage.db, id, '000000', '192.0.2.1', limits);
    for (const refused of [right, wrong]) {
      assert.equal(refused.free, undefined);
      assert.equal(refused.attempt, undefined);
      assert.equal(refused.signedIn, undefined);
    }
    assert.deepEqual([right.network?.count, wrong.network?.count], [3, 4]);
    // Another network's budget is not spent: there the right code is free and signs in.
    const elsewhere = await guess(storage.db, id, '123456', '198.51.100.7', limits);
    assert.equal(elsewhere.free, true);
    assert.ok(elsewhere.signedIn);
  });

  test('parallel wrong guesses and a right one: the budget passes exactly `limit` wrong ones', async () => {
    const limits = { network: 5, everywhere: 100 };
    const wrongChallenge = await newChallenge('ada@example.com', '123456', 1000);
    const rightChallenge = await newChallenge('ada@example.com', '654321', 5);
    const results = await spread(21, dbs, (db, i) =>
      i === 10
        ? guess(db, rightChallenge, '654321', '192.0.2.1', limits)
        : guess(db, wrongChallenge, '000000', '192.0.2.1', limits),
    );
    const wrongTaken = results.filter((r, i) => i !== 10 && r.attempt).length;
    assert.equal(wrongTaken, 5);
    const rightOne = results[10]!;
    // The right code signs in unless the wrong ones had spent the budget when it was read.
    if (rightOne.free) assert.ok(rightOne.signedIn);
    else assert.equal(rightOne.signedIn, undefined);
    const [window] = await storage.db.kysely
      .selectFrom('rate_limits')
      .select('count')
      .where('key', '=', rateLimitKey('otp-guess', [projectId, 'ada@example.com', '192.0.2.1'].join('\0')))
      .execute();
    assert.equal(window?.count, rightOne.free ? 20 : 21);
  });

  test('a used or expired challenge takes no attempt', async () => {
    const id = await newChallenge('ada@example.com', '123456', 5);
    assert.ok((await guess(storage.db, id, '123456')).signedIn);
    const after = await guess(storage.db, id, '123456');
    assert.equal(after.attempt, undefined);
    assert.equal(after.signedIn, undefined);
    const expired = await newChallenge('bob@example.com', '123456', 5);
    const late = await new OtpRepository(storage.db).guess(
      projectId,
      expired,
      hmac(key, expired, '123456'),
      now + 300_000,
      budgets('192.0.2.1'),
      randomUUID(),
    );
    assert.equal(late.attempt, undefined);
  });

  test('parallel rotations of one refresh token: one winner, one successor, one event', async () => {
    const user = await storage.db.kysely
      .insertInto('users')
      .values({
        id: randomUUID(),
        project_id: projectId,
        identifier: 'ada@example.com',
        identifier_type: 'email',
        client_user_id: null,
        created_at: now,
        last_sign_in_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const session = {
      id: randomUUID(),
      project_id: projectId,
      user_id: user.id,
      auth_method: 'OTP',
      auth_time: now,
      device_id: null,
      passkey_id: null,
      created_at: now,
      expires_at: now + 86_400_000,
      last_refreshed_at: null,
      revoked_at: null,
      revoked_reason: null,
      client_id: null,
      scope: null,
      resource: null,
      ip_network: null,
    };
    await new SessionRepository(storage.db).create(session, { id: 'first', secret_hash: 'h0' });
    const results = await spread(20, dbs, (db, i) =>
      new SessionRepository(db).rotate(
        'first',
        {
          id: `next-${i}`,
          secret_hash: `h-${i}`,
          successor_enc: `enc-${i}`,
          session_id: session.id,
          expires_at: session.expires_at,
        },
        now + 1000,
        `client-${i}`,
        {
          id: `evt_${i}`,
          projectId,
          userId: user.id,
          type: 'refresh',
          data: { session_id: session.id },
          createdAt: now + 1000,
        },
      ),
    );
    assert.equal(results.filter(Boolean).length, 1);
    const winner = results.indexOf(true);
    const { kysely } = storage.db;
    const tokens = await kysely.selectFrom('refresh_tokens').selectAll().orderBy('created_at').execute();
    assert.deepEqual(
      tokens.map((t) => [t.id, atGrant(t.rotated_at, now + 1000), t.successor_enc, t.rotated_by]),
      [
        ['first', now + 1000, `enc-${winner}`, `client-${winner}`],
        [`next-${winner}`, null, null, null],
      ],
    );
    assert.equal(tokens[1]!.expires_at, session.expires_at);
    const events = await kysely.selectFrom('audit_events').selectAll().execute();
    assert.deepEqual(
      events.map((e) => [e.id, e.type, e.user_id, JSON.parse(e.data)]),
      [[`evt_${winner}`, 'refresh', user.id, { session_id: session.id }]],
    );
    // The session row is not written by a rotation: its last refresh is read from its tokens.
    const row = await kysely.selectFrom('sessions').select('last_refreshed_at').executeTakeFirstOrThrow();
    assert.equal(row.last_refreshed_at, null);
    const [listed] = await new SessionRepository(storage.db).listByUser(user.id);
    assert.equal(atGrant(listed?.last_refreshed_at, now + 1000), now + 1000);
  });
});
