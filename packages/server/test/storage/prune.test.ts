import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { deleteInBatches } from '../../src/db/batched-delete.js';
import { prune as pruneAudit } from '../../src/modules/audit/audit.repository.js';
import { AuditLog } from '../../src/modules/audit/audit.service.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { deleteEnded } from '../../src/modules/rate-limits/rate-limits.repository.js';
import { SessionRepository } from '../../src/modules/session/session.repository.js';
import { createStorage, eachDialect, type TestStorage } from '../helpers/harness.js';

const OLD = 1_000;
const CUTOFF = 10_000;
const RECENT = 20_000;

/** An `otp.sent` event of `project` at `createdAt`, as a row. */
const eventRow = (id: string, project: string, createdAt: number) => ({
  id,
  project_id: project,
  user_id: null,
  type: 'otp.sent',
  data: '{}',
  ip: null,
  created_at: createdAt,
});

eachDialect('housekeeping deletes in bounded batches', (dialect) => {
  let storage: TestStorage;
  let projectId: string;

  before(async () => {
    storage = await createStorage(dialect);
    const project = await new ProjectsService(new ProjectsRepository(storage.db)).create({ name: 'prune' });
    projectId = project.project_id;
  });
  after(() => storage.cleanup());

  async function addAuditEvents(prefix: string, count: number, createdAt: number): Promise<void> {
    for (let start = 0; start < count; start += 500) {
      const rows = Array.from({ length: Math.min(500, count - start) }, (_, i) =>
        eventRow(`${prefix}${start + i}`, projectId, createdAt + i),
      );
      await storage.db.kysely.insertInto('audit_events').values(rows).execute();
    }
  }

  const countAudit = async () =>
    Number(
      (
        await storage.db.kysely
          .selectFrom('audit_events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  test('expired audit events are found through the project–time index, not one of their own', async () => {
    const names =
      dialect === 'sqlite'
        ? sql<{
            name: string;
          }>`select name from sqlite_master where type = 'index' and tbl_name = 'audit_events'`
        : sql<{
            name: string;
          }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'audit_events'`;
    const rows = (await names.execute(storage.db.kysely)).rows.map((r) => r.name);
    assert.ok(rows.includes('audit_events_project_time'), rows.join(', '));
    assert.ok(
      !rows.includes('audit_events_created_at'),
      'every event would write an index only housekeeping reads',
    );
    const batch = sql`delete from audit_events where id in (select id from audit_events where project_id = ${projectId} and created_at < ${1} limit 1000)`;
    // The scan for projects with expired events (audit.repository.ts, projectsWithEventsBefore).
    const next = sql`with recursive p (id) as (
        select (select project_id from audit_events order by project_id limit 1)
        union all
        select (select project_id from audit_events where project_id > p.id order by project_id limit 1)
        from p where p.id is not null
      )
      select id from p where id is not null
        and (select created_at from audit_events where project_id = p.id order by created_at limit 1) < ${1}`;
    if (dialect === 'sqlite') {
      const plan = async (query: typeof batch) =>
        (await sql<{ detail: string }>`explain query plan ${query}`.execute(storage.db.kysely)).rows
          .map((r) => r.detail)
          .join('\n');
      assert.match(
        await plan(batch),
        /SEARCH audit_events USING (COVERING )?INDEX audit_events_project_time/,
      );
      const scan = await plan(next);
      assert.match(scan, /SEARCH audit_events USING COVERING INDEX audit_events_project_/);
      assert.doesNotMatch(scan, /SCAN audit_events$/m, 'a full scan of the events');
    } else {
      // The test's tables are tiny, so a sequential scan would win; with it off, an index serves.
      await storage.db.kysely.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx);
        const plan = async (query: typeof batch) =>
          (await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(trx)).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
        assert.match(await plan(batch), /Index (Only )?Scan using audit_events_project_time/);
        const scan = await plan(next);
        assert.match(scan, /Index Only Scan using audit_events_project_/);
        assert.doesNotMatch(scan, /Seq Scan on audit_events/);
      });
    }
  });

  test('each statement deletes at most one batch, and one call at most maxBatches of them', async () => {
    await addAuditEvents('old', 2_500, OLD);
    await addAuditEvents('new', 20, RECENT);
    const statements: number[] = [];
    const counted = storage.db.kysely.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        statements.push(Number(args.result.numAffectedRows ?? 0n));
        return args.result;
      },
    });
    const deleted = await deleteInBatches(counted, 'audit_events', 'id', 'created_at', CUTOFF, {
      batchSize: 1000,
      maxBatches: 2,
    });
    assert.equal(deleted, 2000);
    assert.deepEqual(statements, [1000, 1000]);
    assert.equal(await countAudit(), 520);
    statements.length = 0;
    assert.equal(await deleteInBatches(counted, 'audit_events', 'id', 'created_at', CUTOFF), 500);
    assert.deepEqual(statements, [500], 'a short batch ends the loop');
    assert.equal(await countAudit(), 20, 'recent events stay');
  });

  test('AuditLog.prune deletes every expired event of every project, and keeps the rest', async () => {
    await addAuditEvents('again', 1_200, OLD);
    // Events of two more projects, one of them deleted without its events (no row in projects).
    const other = await new ProjectsService(new ProjectsRepository(storage.db)).create({ name: 'prune-2' });
    for (const [id, owner] of [
      ['other', other.project_id],
      ['orphan', 'project-gone'],
    ] as const) {
      const rows = [OLD, OLD + 1, RECENT].map((createdAt, i) => eventRow(`${id}${i}`, owner, createdAt));
      await storage.db.kysely.insertInto('audit_events').values(rows).execute();
    }
    await addAuditEvents('kept', 5, RECENT);
    const recent = await storage.db.kysely
      .selectFrom('audit_events')
      .select('id')
      .where('created_at', '>=', CUTOFF)
      .execute();
    await new AuditLog(storage.db, () => {}).prune(CUTOFF);
    const left = await storage.db.kysely
      .selectFrom('audit_events')
      .select(['id', 'project_id', 'created_at'])
      .execute();
    assert.deepEqual(left.map((r) => r.id).sort(), recent.map((r) => r.id).sort());
    assert.ok(left.every((r) => r.created_at >= RECENT));
    assert.deepEqual(
      [...new Set(left.map((r) => r.project_id))].sort(),
      [projectId, other.project_id, 'project-gone'].sort(),
    );
    await storage.db.kysely
      .deleteFrom('audit_events')
      .where((eb) => eb.or([eb('project_id', '!=', projectId), eb('id', 'like', 'kept%')]))
      .execute();
  });

  test('prune sends a delete only for the projects that have expired events', async () => {
    const rows = ['quiet-a', 'busy', 'quiet-b'].flatMap((owner) =>
      [owner === 'busy' ? OLD : RECENT, RECENT + 1].map((createdAt, i) =>
        eventRow(`${owner}-${i}`, owner, createdAt),
      ),
    );
    await storage.db.kysely.insertInto('audit_events').values(rows).execute();
    // Each statement's text (the housekeeping statements are raw SQL).
    const statements: string[] = [];
    const spy = storage.db.kysely.withPlugin({
      transformQuery: (args) => {
        const node = args.node as { kind: string; sqlFragments?: readonly string[] };
        statements.push(node.sqlFragments?.join('?').trim() ?? node.kind);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    await pruneAudit(spy, CUTOFF);
    const deletes = statements.filter((text) => text.startsWith('delete'));
    assert.equal(deletes.length, 1, statements.join('\n'));
    const left = await storage.db.kysely
      .selectFrom('audit_events')
      .select('id')
      .where('project_id', 'in', ['quiet-a', 'busy', 'quiet-b'])
      .execute();
    assert.deepEqual(left.map((r) => r.id).sort(), [
      'busy-1',
      'quiet-a-0',
      'quiet-a-1',
      'quiet-b-0',
      'quiet-b-1',
    ]);
    await storage.db.kysely
      .deleteFrom('audit_events')
      .where('project_id', 'in', ['quiet-a', 'busy', 'quiet-b'])
      .execute();
  });

  test('prune deletes at most maxRows a call over all projects, the rest on the next call', async () => {
    const owners = ['cap-a', 'cap-b', 'cap-c'];
    // 250 + 300 + 300 expired: batches of 200 fit 450 under a cap of 500 (a 50-row short batch
    // ends cap-a, one full batch of cap-b, then less than a batch is left of the cap).
    const rows = owners.flatMap((owner) =>
      Array.from({ length: owner === 'cap-a' ? 250 : 300 }, (_, i) =>
        eventRow(`${owner}-${i}`, owner, OLD + i),
      ),
    );
    await storage.db.kysely.insertInto('audit_events').values(rows).execute();
    const left = async () =>
      (
        await storage.db.kysely
          .selectFrom('audit_events')
          .select('id')
          .where('project_id', 'in', owners)
          .execute()
      ).length;
    await pruneAudit(storage.db.kysely, CUTOFF, { maxRows: 500, batchSize: 200 });
    assert.equal(await left(), 400, 'more than maxRows went, or fewer than fit');
    await pruneAudit(storage.db.kysely, CUTOFF, { maxRows: 500, batchSize: 200 });
    await pruneAudit(storage.db.kysely, CUTOFF, { maxRows: 500, batchSize: 200 });
    assert.equal(await left(), 0);
  });

  test('SessionRepository.pruneExpired deletes ended sessions and, by cascade, their refresh tokens', async () => {
    await storage.db.kysely
      .insertInto('users')
      .values({
        id: 'user-1',
        project_id: projectId,
        identifier: 'prune@example.com',
        identifier_type: 'email',
        client_user_id: null,
        created_at: OLD,
        last_sign_in_at: null,
      })
      .execute();
    const session = (id: string, expiresAt: number) => ({
      id,
      project_id: projectId,
      user_id: 'user-1',
      auth_method: 'OTP',
      auth_time: OLD,
      device_id: null,
      created_at: OLD,
      expires_at: expiresAt,
      last_refreshed_at: null,
      revoked_at: null,
      revoked_reason: null,
    });
    const ended = Array.from({ length: 1_100 }, (_, i) => session(`ended-${i}`, OLD + i));
    for (let i = 0; i < ended.length; i += 500)
      await storage.db.kysely
        .insertInto('sessions')
        .values(ended.slice(i, i + 500))
        .execute();
    await storage.db.kysely.insertInto('sessions').values(session('alive', RECENT)).execute();
    await storage.db.kysely
      .insertInto('refresh_tokens')
      .values([
        { id: 'rt-ended', session_id: 'ended-7', secret_hash: 'x', created_at: OLD, expires_at: OLD + 7 },
        { id: 'rt-alive', session_id: 'alive', secret_hash: 'y', created_at: OLD, expires_at: RECENT },
      ])
      .execute();
    await new SessionRepository(storage.db).pruneExpired(CUTOFF);
    const sessions = await storage.db.kysely.selectFrom('sessions').select('id').execute();
    assert.deepEqual(
      sessions.map((s) => s.id),
      ['alive'],
    );
    const tokens = await storage.db.kysely.selectFrom('refresh_tokens').select('id').execute();
    assert.deepEqual(
      tokens.map((t) => t.id),
      ['rt-alive'],
    );
  });
});

eachDialect('housekeeping of rate-limit windows', (dialect) => {
  let storage: TestStorage;

  before(async () => {
    storage = await createStorage(dialect);
  });
  after(() => storage.cleanup());

  const keys = async () =>
    (await storage.db.kysely.selectFrom('rate_limits').select('key').orderBy('key').execute()).map(
      (r) => r.key,
    );

  test('ended windows go through rate_limits_reset_at in batches; live ones stay', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({
      key: `k${String(i).padStart(2, '0')}`,
      count: 1,
      reset_at: i < 20 ? OLD + i : RECENT,
    }));
    await storage.db.kysely.insertInto('rate_limits').values(rows).execute();
    if (dialect === 'sqlite') {
      const plan = await sql<{
        detail: string;
      }>`explain query plan delete from rate_limits where key in (select key from rate_limits where reset_at < ${1} limit 1000)`.execute(
        storage.db.kysely,
      );
      assert.match(plan.rows.map((r) => r.detail).join('\n'), /INDEX rate_limits_reset_at/);
    } else {
      const indexes = await sql<{
        name: string;
      }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'rate_limits'`.execute(
        storage.db.kysely,
      );
      assert.ok(indexes.rows.some((r) => r.name === 'rate_limits_reset_at'));
    }
    // A window ending exactly now has ended.
    assert.equal(await deleteEnded(storage.db.kysely, OLD + 19), 20);
    assert.equal((await keys()).length, 10);
    await storage.db.kysely.deleteFrom('rate_limits').execute();
  });

  if (dialect === 'postgres') {
    test('a window another statement holds is skipped, not waited for, and goes on a later run', async () => {
      await storage.db.kysely
        .insertInto('rate_limits')
        .values([
          { key: 'held', count: 1, reset_at: OLD },
          { key: 'free', count: 1, reset_at: OLD },
        ])
        .execute();
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const holder = storage.db.kysely.transaction().execute(async (trx) => {
        await sql`select key from rate_limits where key = 'held' for update`.execute(trx);
        locked();
        await held;
      });
      await isLocked;
      try {
        // Without `skip locked` this waits for the holder (and, against a statement locking the
        // same rows in another order, deadlocks).
        assert.equal(await deleteEnded(storage.db.kysely, CUTOFF), 1);
        assert.deepEqual(await keys(), ['held']);
      } finally {
        release();
        await holder;
      }
      assert.equal(await deleteEnded(storage.db.kysely, CUTOFF), 1);
      assert.deepEqual(await keys(), []);
    });
  }
});
