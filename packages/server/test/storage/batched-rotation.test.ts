import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { randomUUID } from '../../src/crypto/random.js';
import type { Db } from '../../src/db/connect.js';
import { AuditLog } from '../../src/modules/audit/audit.service.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { SessionRepository } from '../../src/modules/session/session.repository.js';
import { createStorage, describePostgres, type TestStorage } from '../helpers/harness.js';

/**
 * A rotation's time as the grant's `now`: PostgreSQL stamps the grant's start plus the few ms its
 * statement waited before it had its row (session.repository.ts, `tookEffect`).
 */
const atGrant = (at: number | null | undefined, start: number) =>
  typeof at === 'number' && at >= start && at < start + 5000 ? start : at;

/** The statements `db` sends while `fn` runs: how many, and their SQL. */
async function statementsOf<T>(
  db: Db,
  fn: () => Promise<T>,
): Promise<{ result: T; statements: number; sql: string[] }> {
  const executor = db.kysely.getExecutor();
  const original = executor.executeQuery.bind(executor);
  const sent: string[] = [];
  executor.executeQuery = ((...args: Parameters<typeof original>) => {
    sent.push(args[0].sql);
    return original(...args);
  }) as typeof executor.executeQuery;
  try {
    return { result: await fn(), statements: sent.length, sql: sent };
  } finally {
    executor.executeQuery = original;
  }
}

// SessionRepository.rotateCurrent on PostgreSQL: the grants of one turn of the event loop share one
// statement. Each must come out exactly as it would alone: its own session, user and claims, its
// own successor and event, nothing for a token that is not current, and a failure confined to the
// grant that caused it.
describePostgres('batched refresh rotations [postgres]', () => {
  let storage: TestStorage;
  let projectId: string;
  let otherProjectId: string;
  const now = Date.UTC(2030, 0, 1);

  beforeEach(async () => {
    storage = await createStorage('postgres');
    const projects = new ProjectsService(new ProjectsRepository(storage.db), () => now);
    projectId = (await projects.create({ name: 'p' })).project_id;
    otherProjectId = (await projects.create({ name: 'q' })).project_id;
  });
  afterEach(() => storage.cleanup());

  /** A user (with custom claims naming them) and a session whose current token is `t<i>`. */
  async function session(i: number, project = projectId) {
    const { kysely } = storage.db;
    const userId = `user-${i}`;
    await kysely
      .insertInto('users')
      .values({
        id: userId,
        project_id: project,
        identifier: `u${i}@example.com`,
        identifier_type: 'email',
        client_user_id: `client-${i}`,
        created_at: now,
        last_sign_in_at: now,
      })
      .execute();
    await kysely
      .insertInto('user_claims')
      .values({ user_id: userId, project_id: project, claims: JSON.stringify({ n: i }), updated_at: now })
      .execute();
    const sessionId = `session-${i}`;
    await new SessionRepository(storage.db).create(
      {
        id: sessionId,
        project_id: project,
        user_id: userId,
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
      },
      { id: `t${i}`, secret_hash: `h${i}` },
    );
    return { userId, sessionId };
  }

  /** `rotateCurrent` of token `t<i>`, presenting `secretHash`, its successor `next-<i>`. */
  const rotate = (repository: SessionRepository, i: number, secretHash = `h${i}`, project = projectId) =>
    repository.rotateCurrent(
      { id: `t${i}`, secret_hash: secretHash },
      project,
      { id: `next-${i}-${randomUUID()}`, secret_hash: `next-h${i}`, successor_enc: `enc-${i}` },
      now + 1000,
      `client-${i}`,
      { id: `evt_${i}_${randomUUID()}`, createdAt: now + 1000 },
    );

  test('40 grants in one turn: one statement, each with its own session, user and claims', async () => {
    const sessions: Array<{ userId: string; sessionId: string }> = [];
    for (let i = 0; i < 40; i++) sessions.push(await session(i));
    const repository = new SessionRepository(storage.db);
    const { result, statements } = await statementsOf(storage.db, () =>
      Promise.all(sessions.map((_, i) => rotate(repository, i))),
    );
    // At most 32 grants a statement.
    assert.equal(statements, 2);
    result.forEach((found, i) => {
      assert.ok(found, `grant ${i} won`);
      assert.equal(found.token.id, `t${i}`);
      assert.equal(found.token.secret_hash, `h${i}`);
      assert.equal(found.token.rotated_at, null, 'the token as it was before this rotation');
      assert.equal(found.session.id, sessions[i]!.sessionId);
      assert.equal(found.session.user_id, sessions[i]!.userId);
      assert.equal(found.user.id, sessions[i]!.userId);
      assert.equal(found.user.identifier, `u${i}@example.com`);
      assert.equal(found.user.client_user_id, `client-${i}`);
      assert.deepEqual(found.claims, { n: i });
    });
    const { kysely } = storage.db;
    const tokens = await kysely.selectFrom('refresh_tokens').selectAll().execute();
    for (let i = 0; i < 40; i++) {
      const old = tokens.find((t) => t.id === `t${i}`)!;
      assert.equal(atGrant(old.rotated_at, now + 1000), now + 1000);
      assert.equal(old.successor_enc, `enc-${i}`);
      assert.equal(old.rotated_by, `client-${i}`);
      const next = tokens.filter((t) => t.id.startsWith(`next-${i}-`));
      assert.equal(next.length, 1);
      assert.equal(next[0]!.session_id, sessions[i]!.sessionId);
      assert.equal(next[0]!.secret_hash, `next-h${i}`);
    }
    const events = await kysely
      .selectFrom('audit_events')
      .selectAll()
      .where('type', '=', 'refresh')
      .execute();
    assert.equal(events.length, 40);
    for (const event of events) {
      const i = Number(event.id.split('_')[1]);
      assert.equal(event.user_id, sessions[i]!.userId);
      assert.deepEqual(JSON.parse(event.data), { session_id: sessions[i]!.sessionId });
    }
  });

  test('tokens that are not current get nothing, in the same batch as those that are', async () => {
    for (let i = 0; i < 6; i++) await session(i);
    await session(6, otherProjectId);
    const repository = new SessionRepository(storage.db);
    await storage.db.kysely
      .updateTable('sessions')
      .set({ revoked_at: now, revoked_reason: 'test' })
      .where('id', '=', 'session-3')
      .execute();
    await storage.db.kysely
      .updateTable('refresh_tokens')
      .set({ expires_at: now })
      .where('id', '=', 't4')
      .execute();
    const results = await Promise.all([
      rotate(repository, 0),
      rotate(repository, 1, 'wrong-secret'),
      rotate(repository, 2),
      rotate(repository, 3),
      rotate(repository, 4),
      rotate(repository, 6),
      rotate(repository, 5),
    ]);
    assert.deepEqual(
      results.map((r) => r?.token.id),
      ['t0', undefined, 't2', undefined, undefined, undefined, 't5'],
    );
    const rotated = await storage.db.kysely
      .selectFrom('refresh_tokens')
      .select('id')
      .where('rotated_at', 'is not', null)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rotated.map((r) => r.id),
      ['t0', 't2', 't5'],
    );
  });

  test('one token twice in one turn: one winner, the other waits for the next batch and loses', async () => {
    await session(0);
    await session(1);
    const repository = new SessionRepository(storage.db);
    const results = await Promise.all([rotate(repository, 0), rotate(repository, 1), rotate(repository, 0)]);
    assert.ok(results[0]);
    assert.ok(results[1]);
    assert.equal(results[2], undefined);
    const successors = await storage.db.kysely
      .selectFrom('refresh_tokens')
      .select('id')
      .where('session_id', '=', 'session-0')
      .execute();
    assert.equal(successors.length, 2, 't0 and one successor');
  });

  test('a batch that fails is run grant by grant: only the failing grant fails', async () => {
    for (let i = 0; i < 5; i++) await session(i);
    const failures: Array<{ error: unknown; size: number }> = [];
    const repository = new SessionRepository(storage.db, {
      onBatchFailed: (error, size) => failures.push({ error, size }),
    });
    const clash = repository.rotateCurrent(
      { id: 't2', secret_hash: 'h2' },
      projectId,
      // The successor's id is taken: its insert violates the primary key.
      { id: 't4', secret_hash: 'x', successor_enc: 'enc' },
      now + 1000,
      'client',
      { id: `evt_${randomUUID()}`, createdAt: now + 1000 },
    );
    const others = [0, 1, 3, 4].map((i) => rotate(repository, i));
    await assert.rejects(clash, /duplicate key/);
    const found = await Promise.all(others);
    assert.deepEqual(
      found.map((f) => f?.token.id),
      ['t0', 't1', 't3', 't4'],
    );
    const t2 = await storage.db.kysely
      .selectFrom('refresh_tokens')
      .select('rotated_at')
      .where('id', '=', 't2')
      .executeTakeFirstOrThrow();
    assert.equal(t2.rotated_at, null, 'the failed grant left nothing behind');
    // The batch's own failure is told once (the context logs it), not only the grant's.
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.size, 5);
    assert.match(String((failures[0]!.error as Error).message), /duplicate key/);
  });

  test('a session read by id reads no refresh token; the sessions listing gives its newest rotation', async () => {
    // Its last refresh is an aggregate over all of the session's tokens: only the listing pays it.
    const { userId, sessionId } = await session(0);
    const repository = new SessionRepository(storage.db);
    await rotate(repository, 0);
    const { result: found, sql } = await statementsOf(storage.db, () => repository.findById(sessionId));
    assert.equal(found?.id, sessionId);
    assert.equal('last_refreshed_at' in (found ?? {}), false);
    assert.equal(sql.length, 1);
    assert.doesNotMatch(sql[0]!, /refresh_tokens/);
    const [listed] = await repository.listByUser(userId);
    assert.equal(atGrant(listed?.last_refreshed_at, now + 1000), now + 1000);
  });

  test('a context that cannot be built after the commit fails its own grant only; the others keep their rotation', async () => {
    for (let i = 0; i < 3; i++) await session(i);
    // Claims the database holds but that do not parse: found only once the batch has committed.
    await storage.db.kysely
      .updateTable('user_claims')
      .set({ claims: '{not json' })
      .where('user_id', '=', 'user-1')
      .execute();
    const repository = new SessionRepository(storage.db);
    const { result: settled, statements } = await statementsOf(storage.db, () =>
      Promise.allSettled([0, 1, 2].map((i) => rotate(repository, i))),
    );
    assert.equal(statements, 1, 'nothing is retried: the batch committed');
    assert.equal(settled[1]!.status, 'rejected');
    assert.deepEqual(
      [settled[0], settled[2]].map((s) => (s?.status === 'fulfilled' ? s.value?.token.id : 'rejected')),
      ['t0', 't2'],
    );
    const events = await storage.db.kysely.selectFrom('audit_events').select('type').execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['refresh', 'refresh', 'refresh'],
      'one refresh event a rotation, no grace or reuse event',
    );
  });
});

// AuditLog.record on PostgreSQL: the events of one turn of the event loop in one statement.
describePostgres('batched audit events [postgres]', () => {
  let storage: TestStorage;
  afterEach(() => storage.cleanup());

  test('70 events in one turn: two statements, every event stored as given; a bad one fails alone', async () => {
    storage = await createStorage('postgres');
    const errors: unknown[] = [];
    const audit = new AuditLog(
      storage.db,
      (error) => errors.push(error),
      () => Date.UTC(2030, 0, 1),
    );
    const { statements } = await statementsOf(storage.db, () =>
      Promise.all(
        Array.from({ length: 70 }, (_, i) =>
          audit.record({
            projectId: 'project',
            userId: i % 2 ? `user-${i}` : null,
            type: 'refresh',
            data: { session_id: `s${i}` },
            ...(i % 3 ? { ip: '192.0.2.1' } : {}),
          }),
        ),
      ),
    );
    assert.equal(statements, 2);
    assert.deepEqual(errors, []);
    const stored = await storage.db.kysely.selectFrom('audit_events').selectAll().execute();
    assert.equal(stored.length, 70);
    for (const event of stored) {
      const n = Number((JSON.parse(event.data) as { session_id: string }).session_id.slice(1));
      assert.equal(event.user_id, n % 2 ? `user-${n}` : null);
      assert.equal(event.ip, n % 3 ? '192.0.2.1' : null);
      assert.equal(event.project_id, 'project');
      assert.equal(event.created_at, Date.UTC(2030, 0, 1));
    }
    // An event the database refuses (no project) fails its batch; the others are stored one by one.
    await Promise.all([
      audit.record({ projectId: 'project', type: 'refresh', data: { session_id: 's100' } }),
      audit.record({ projectId: null as unknown as string, type: 'refresh', data: { session_id: 's101' } }),
      audit.record({ projectId: 'project', type: 'refresh', data: { session_id: 's102' } }),
    ]);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /null value/);
    assert.equal((await storage.db.kysely.selectFrom('audit_events').select('id').execute()).length, 72);
  });
});
