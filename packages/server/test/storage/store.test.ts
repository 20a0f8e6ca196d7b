import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { randomUUID } from '../../src/crypto/random.js';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import { migrationProvider } from '../../src/migrations/index.js';
import { OtpRepository } from '../../src/modules/otp/otp.repository.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { HITS_PER_STATEMENT } from '../../src/modules/rate-limits/rate-limits.repository.js';
import { UsersRepository } from '../../src/modules/users/users.repository.js';
import { IpLimiter } from '../../src/plugins/ip-limiter.js';
import { RateLimiter } from '../../src/plugins/rate-limiter.js';
import {
  createStorage,
  type Dialect,
  eachDialect,
  postgresUrl,
  type TestStorage,
} from '../helpers/harness.js';

/** A database no migration has touched yet (a new SQLite file or a new PostgreSQL schema). */
async function emptyDatabase(dialect: Dialect): Promise<{ open(): Promise<Db>; cleanup(): Promise<void> }> {
  const opened: Db[] = [];
  let open: () => Promise<Db>;
  let drop: () => Promise<void>;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-store-'));
    open = () => connect(`sqlite:${join(dir, 'fresh.db')}`);
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const url = postgresUrl!;
    const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
    open = () => connect(url, { schema });
    drop = async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    };
  }
  return {
    async open() {
      const db = await open();
      opened.push(db);
      return db;
    },
    async cleanup() {
      for (const db of opened) await db.close().catch(() => {});
      await drop();
    },
  };
}

/** Spreads calls over several connections to one database (several instances, in effect). */
function spread<T>(n: number, dbs: Db[], call: (db: Db, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => call(dbs[i % dbs.length]!, i)));
}

eachDialect('migrations', (dialect) => {
  test('apply once, then a second run (also from another connection) does nothing', async () => {
    const database = await emptyDatabase(dialect);
    try {
      const db = await database.open();
      const all = Object.keys(await migrationProvider.getMigrations());
      assert.ok(all.length > 0);
      assert.deepEqual(await migrate(db), all);
      // PostgreSQL introspection lists every schema's tables: keep only this connection's own.
      const schema =
        dialect === 'postgres'
          ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely)).rows[0]
              ?.schema
          : undefined;
      const tables = async () =>
        (await db.kysely.introspection.getTables())
          .filter((t) => schema === undefined || t.schema === schema)
          .map((t) => t.name)
          .sort();
      const after = await tables();
      for (const table of ['projects', 'signing_keys', 'users', 'sessions', 'refresh_tokens', 'rate_limits'])
        assert.ok(after.includes(table), `table ${table} is missing`);

      assert.deepEqual(await migrate(db), []);
      const other = await database.open();
      assert.deepEqual(await migrate(other), []);
      assert.deepEqual(await tables(), after);
      // Still usable after the reruns.
      const projects = new ProjectsService(new ProjectsRepository(other));
      const created = await projects.create({ name: 'after migrations' });
      assert.equal((await projects.byApiKeyId(created.api_key_id))?.name, 'after migrations');
    } finally {
      await database.cleanup();
    }
  });

  test('a database created by the test harness is migrated to the latest', async () => {
    const storage = await createStorage(dialect);
    try {
      assert.deepEqual(await migrate(storage.db), []);
    } finally {
      await storage.cleanup();
    }
  });

  test('sessions are indexed for housekeeping by expiry, for credential removal by device and passkey, not by revocation', async () => {
    const storage = await createStorage(dialect);
    try {
      const query =
        dialect === 'sqlite'
          ? sql<{
              name: string;
            }>`select name from sqlite_master where type = 'index' and tbl_name = 'sessions' and sql is not null`
          : sql<{
              name: string;
            }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'sessions' and indexname <> 'sessions_pkey'`;
      const names = (await query.execute(storage.db.kysely)).rows.map((r) => r.name).sort();
      assert.deepEqual(names, ['sessions_device', 'sessions_expires', 'sessions_passkey', 'sessions_user']);
      // Most sessions (OTP's) have neither a device nor a passkey: those indexes hold set values only.
      const definitions =
        dialect === 'sqlite'
          ? sql<{
              name: string;
              definition: string;
            }>`select name, sql as definition from sqlite_master where type = 'index' and tbl_name = 'sessions' and sql is not null`
          : sql<{
              name: string;
              definition: string;
            }>`select indexname as name, indexdef as definition from pg_indexes where schemaname = current_schema() and tablename = 'sessions'`;
      for (const { name, definition } of (await definitions.execute(storage.db.kysely)).rows) {
        const column = { sessions_device: 'device_id', sessions_passkey: 'passkey_id' }[name];
        if (column) assert.match(definition, new RegExp(`where \\(?"?${column}"? is not null`, 'i'), name);
      }
      if (dialect === 'sqlite') {
        const byDevice = await sql<{
          detail: string;
        }>`explain query plan update sessions set revoked_at = 1 where device_id = ${'d'} and revoked_at is null`.execute(
          storage.db.kysely,
        );
        assert.match(byDevice.rows.map((r) => r.detail).join('\n'), /INDEX sessions_device/);
        const plan = await sql<{
          detail: string;
        }>`explain query plan delete from sessions where expires_at < ${1}`.execute(storage.db.kysely);
        assert.match(
          plan.rows.map((r) => r.detail).join('\n'),
          /SEARCH sessions USING (COVERING )?INDEX sessions_expires/,
        );
      }
    } finally {
      await storage.cleanup();
    }
  });
});

/**
 * `db` counting the statements it sends; a statement for which `fails(n)` (n counts from 1) is true
 * fails as a dropped connection would, without reaching the database.
 */
function counted(db: Db, fails: (n: number) => boolean = () => false) {
  let sent = 0;
  const kysely = new Proxy(db.kysely, {
    get(target, prop) {
      if (prop === 'executeQuery')
        return (...args: Parameters<typeof target.executeQuery>) => {
          sent++;
          if (fails(sent)) return Promise.reject(new Error('connection lost'));
          return target.executeQuery(...args);
        };
      const value = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: { ...db, kysely } as Db, sent: () => sent };
}

eachDialect('atomic storage operations', (dialect) => {
  let storage: TestStorage;
  let dbs: Db[];
  let projectId: string;
  let nowMs: number;
  const now = () => nowMs;

  beforeEach(async () => {
    nowMs = Date.UTC(2030, 0, 1);
    storage = await createStorage(dialect);
    dbs = [storage.db, await storage.reopen(), await storage.reopen()];
    const project = await new ProjectsService(new ProjectsRepository(storage.db), now).create({ name: 'p' });
    projectId = project.project_id;
  });
  afterEach(() => storage.cleanup());

  test('per-IP limits: exact on one instance, shared between instances at each sync', async () => {
    const rule = { limit: 60, window: 60 };
    const [a, b] = [new IpLimiter(dbs[0]!, now), new IpLimiter(dbs[1]!, now)];
    const hits = (limiter: IpLimiter, n: number, ip = '192.0.2.1') =>
      Array.from({ length: n }, () => limiter.hit('otp', ip, rule));
    // One instance alone: the 61st hit is refused, whatever the other instance has not shared yet.
    const first = hits(a, 61);
    assert.deepEqual(
      first.map((r) => r.allowed),
      [...Array(60).fill(true), false],
    );
    assert.equal(first[60]!.retryAfter, 60);
    assert.ok(
      hits(b, 40).every((r) => r.allowed),
      'b has not heard of a yet',
    );
    // One sync after the other: a sync reads back the shared total as of its own write, so of two
    // running at once the first to write would not hear of the second (a flake when b wrote first).
    await a.sync();
    await b.sync();
    // b, which synced last, sees the total of both (61 + 40), as does the shared row.
    assert.equal(b.hit('otp', '192.0.2.1', rule).count, 102);
    assert.equal(a.hit('otp', '192.0.2.1', rule).allowed, false);
    const rows = await storage.db.kysely.selectFrom('rate_limits').selectAll().execute();
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.count), 101);
    // Other addresses and other endpoint families count apart.
    assert.equal(a.hit('otp', '192.0.2.2', rule).count, 1);
    assert.equal(a.hit('oauth', '192.0.2.1', rule).count, 1);
    // A new window starts from one, on both instances and in the shared row.
    nowMs += 60_000;
    assert.equal(a.hit('otp', '192.0.2.1', rule).count, 1);
    await a.sync();
    assert.equal(b.hit('otp', '192.0.2.1', rule).count, 1);
    await b.stop();
    const [row] = await storage.db.kysely
      .selectFrom('rate_limits')
      .selectAll()
      .where('reset_at', '>', nowMs)
      .orderBy('count', 'desc')
      .execute();
    assert.equal(Number(row!.count), 2);
  });

  test('per-IP limits: a sync shares many addresses in a few statements, and one that fails midway counts nothing twice', async () => {
    const rule = { limit: 1000, window: 60 };
    const addresses = Array.from(
      { length: HITS_PER_STATEMENT * 2 + 1 },
      (_, i) => `198.51.${i >> 8}.${i & 255}`,
    );
    const a = counted(dbs[0]!);
    const b = counted(dbs[1]!, (n) => n === 2);
    const [la, lb] = [new IpLimiter(a.db, now), new IpLimiter(b.db, now)];
    for (const ip of addresses) {
      la.hit('otp', ip, rule);
      lb.hit('otp', ip, rule);
      lb.hit('otp', ip, rule);
    }
    await la.sync();
    assert.equal(a.sent(), 3, 'one statement per 500 addresses');
    // b's second statement fails: its first 500 addresses are shared, the rest stay pending.
    await assert.rejects(lb.sync(), /connection lost/);
    await lb.sync();
    assert.equal(b.sent(), 4, 'the second sync sends only the 501 addresses left, in two statements');
    // Every address: 1 hit from a and 2 from b, each counted once, and b has heard of a's.
    for (const ip of addresses) assert.equal(lb.hit('otp', ip, rule).count, 4, ip);
    const rows = await storage.db.kysely.selectFrom('rate_limits').select(['count']).execute();
    assert.equal(rows.length, addresses.length);
    assert.ok(rows.every((r) => Number(r.count) === 3));
  });

  test('per-IP limits: failed syncs are reported once a run, keep their counts, and the recovery is reported', async () => {
    const rule = { limit: 1000, window: 60 };
    let away = false;
    const { db } = counted(dbs[0]!, () => away);
    const events: Array<[string, number]> = [];
    const limiter = new IpLimiter(db, now, 1000, 100, {
      syncFailed: (error, streak) => {
        assert.match(String(error), /connection lost/);
        events.push(['failed', streak]);
      },
      syncRecovered: (failed) => events.push(['recovered', failed]),
    });
    for (let i = 0; i < 5; i++) limiter.hit('otp', '192.0.2.9', rule);
    away = true;
    for (let i = 0; i < 3; i++) await assert.rejects(limiter.sync(), /connection lost/);
    limiter.hit('otp', '192.0.2.9', rule);
    away = false;
    await limiter.sync();
    await limiter.sync();
    assert.deepEqual(events, [
      ['failed', 1],
      ['failed', 2],
      ['failed', 3],
      ['recovered', 3],
    ]);
    // Nothing counted while the database was away is lost or counted twice.
    const rows = await storage.db.kysely.selectFrom('rate_limits').select(['count']).execute();
    assert.deepEqual(
      rows.map((r) => Number(r.count)),
      [6],
    );
  });

  test('per-IP limits: memory holds a bounded number of windows, and an address let go is limited again at the next sync', async () => {
    const rule = { limit: 60, window: 60 };
    const limiter = new IpLimiter(dbs[0]!, now, 1000, 100);
    const results = Array.from({ length: 61 }, () => limiter.hit('otp', '192.0.2.7', rule));
    assert.equal(results.at(-1)!.allowed, false);
    await limiter.sync();
    // 300 other addresses: the table stays at 100 windows, and 192.0.2.7's (shared, oldest) goes.
    for (let i = 0; i < 300; i++) limiter.hit('otp', `203.0.113.${i % 256}/${i}`, rule);
    assert.ok(limiter.size <= 100, `${limiter.size} windows`);
    // Back, it starts from its own count until the next sync reads the shared one (61 + 1).
    assert.equal(limiter.hit('otp', '192.0.2.7', rule).allowed, true);
    await limiter.sync();
    const again = limiter.hit('otp', '192.0.2.7', rule);
    assert.equal(again.count, 63);
    assert.equal(again.allowed, false);
    // Hits not yet shared do not hold the table open either: 1,000 new addresses between syncs.
    for (let i = 0; i < 1000; i++) limiter.hit('oauth', `198.51.100.${i % 256}/${i}`, rule);
    assert.ok(limiter.size <= 100, `${limiter.size} windows`);
  });

  test('the rate limiter counts 50 parallel hits exactly', async () => {
    const limiters = dbs.map((db) => new RateLimiter(db, now));
    const rule = { limit: 20, window: 60 };
    const results = await spread(50, dbs, (_db, i) =>
      limiters[i % limiters.length]!.hit('test', 'subject', rule),
    );
    assert.deepEqual(
      results.map((r) => r.count).sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(results.filter((r) => r.allowed).length, 20);
    for (const r of results) assert.equal(r.allowed, r.count <= 20);
    const rows = await storage.db.kysely.selectFrom('rate_limits').selectAll().execute();
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.count), 50);

    // Another subject has its own counter; a new window starts from one.
    assert.equal((await limiters[1]!.hit('test', 'other', rule)).count, 1);
    nowMs += 60_000;
    const fresh = await spread(10, dbs, (_db, i) =>
      limiters[i % limiters.length]!.hit('test', 'subject', rule),
    );
    assert.deepEqual(
      fresh.map((r) => r.count).sort((a, b) => a - b),
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
    assert.ok(fresh.every((r) => r.allowed));
  });

  async function newChallenge(maxAttempts: number, expiresIn = 300_000): Promise<string> {
    const id = `otp_${randomBytes(16).toString('base64url')}`;
    await new OtpRepository(storage.db).insert({
      id,
      project_id: projectId,
      identifier: 'ada@example.com',
      channel: 'email',
      code_hash: 'not-a-real-hash',
      max_attempts: maxAttempts,
      created_at: nowMs,
      expires_at: nowMs + expiresIn,
      consumed_at: null,
    });
    return id;
  }

  test('reserveAttempt under parallel calls grants exactly max_attempts', async () => {
    const repositories = dbs.map((db) => new OtpRepository(db));
    for (const maxAttempts of [1, 5]) {
      const id = await newChallenge(maxAttempts);
      const results = await spread(30, dbs, (_db, i) =>
        repositories[i % repositories.length]!.reserveAttempt(projectId, id, nowMs),
      );
      const granted = results.filter((r) => r !== undefined);
      assert.equal(granted.length, maxAttempts);
      assert.deepEqual(
        granted.map((r) => Number(r.attempts)).sort((a, b) => a - b),
        Array.from({ length: maxAttempts }, (_, i) => i + 1),
      );
      for (const r of granted) assert.equal(Number(r.max_attempts), maxAttempts);
      const row = await repositories[0]!.find(projectId, id);
      assert.equal(Number(row?.attempts), maxAttempts);
      assert.equal(await repositories[1]!.reserveAttempt(projectId, id, nowMs), undefined);
    }
  });

  test('reserveAttempt refuses expired, consumed and foreign challenges', async () => {
    const repository = new OtpRepository(storage.db);
    const expired = await newChallenge(5, 1000);
    assert.equal(await repository.reserveAttempt(projectId, expired, nowMs + 1000), undefined);
    const consumed = await newChallenge(5);
    assert.equal(await repository.consume(consumed, nowMs), true);
    assert.equal(await repository.reserveAttempt(projectId, consumed, nowMs), undefined);
    const foreign = await newChallenge(5);
    assert.equal(await repository.reserveAttempt(randomUUID(), foreign, nowMs), undefined);
    assert.equal(await repository.reserveAttempt(projectId, 'otp_unknown', nowMs), undefined);
  });

  test('consume has exactly one winner', async () => {
    const repositories = dbs.map((db) => new OtpRepository(db));
    for (let round = 0; round < 3; round++) {
      const id = await newChallenge(5);
      const results = await spread(20, dbs, (_db, i) =>
        repositories[i % repositories.length]!.consume(id, nowMs),
      );
      assert.equal(results.filter(Boolean).length, 1);
      assert.notEqual((await repositories[0]!.find(projectId, id))?.consumed_at, null);
    }
  });

  test('users.signIn under parallel calls creates one user and records the sign-in', async () => {
    const repositories = dbs.map((db) => new UsersRepository(db));
    for (const identifier of ['ada@example.com', '+14155550100']) {
      const results = await spread(20, dbs, (_db, i) =>
        repositories[i % repositories.length]!.signIn({
          id: randomUUID(),
          project_id: projectId,
          identifier,
          identifier_type: identifier.startsWith('+') ? 'phone' : 'email',
          client_user_id: null,
          created_at: nowMs,
          last_sign_in_at: nowMs + i,
        }),
      );
      const ids = new Set(results.map((u) => u.id));
      for (const u of results) assert.equal(u.created_at, nowMs);
      const stored = await storage.db.kysely
        .selectFrom('users')
        .select('last_sign_in_at')
        .where('identifier', '=', identifier)
        .executeTakeFirstOrThrow();
      assert.ok(Number(stored.last_sign_in_at) >= nowMs && Number(stored.last_sign_in_at) < nowMs + 20);
      assert.equal(ids.size, 1);
      for (const u of results) assert.equal(u.identifier, identifier);
      const rows = await storage.db.kysely
        .selectFrom('users')
        .select('id')
        .where('project_id', '=', projectId)
        .where('identifier', '=', identifier)
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        [...ids],
      );
      // A later sign-in keeps the user and moves last_sign_in_at.
      const later = await repositories[0]!.signIn({
        id: randomUUID(),
        project_id: projectId,
        identifier,
        identifier_type: identifier.startsWith('+') ? 'phone' : 'email',
        client_user_id: null,
        created_at: nowMs + 5000,
        last_sign_in_at: nowMs + 5000,
      });
      assert.equal(later.id, [...ids][0]);
      assert.equal(Number(later.created_at), nowMs);
      assert.equal(Number(later.last_sign_in_at), nowMs + 5000);
    }
  });
});
