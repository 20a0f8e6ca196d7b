import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Db } from '../../src/db/connect.js';
import { OtpRepository } from '../../src/modules/otp/otp.repository.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { rateLimitKey } from '../../src/modules/rate-limits/rate-limits.repository.js';
import { type Hit, RateLimiter } from '../../src/plugins/rate-limiter.js';
import { createStorage, eachDialect, type TestStorage } from '../helpers/harness.js';

// RateLimiter.hitSteps: windows counted step by step, a step only when every window before it
// allowed, and a row inserted only when all did. One statement on PostgreSQL, one a step on SQLite:
// both must count the same windows and store the same rows.
eachDialect('rate limits in steps', (dialect) => {
  let storage: TestStorage;
  let dbs: Db[];
  let projectId: string;
  let nowMs: number;
  const now = () => nowMs;
  let serial = 0;

  beforeEach(async () => {
    nowMs = Date.UTC(2030, 0, 1);
    storage = await createStorage(dialect);
    dbs = [storage.db, await storage.reopen()];
    projectId = (await new ProjectsService(new ProjectsRepository(storage.db), now).create({ name: 'p' }))
      .project_id;
  });
  afterEach(() => storage.cleanup());

  const hit = (scope: string, limit: number, window = 60): Hit => ({
    scope,
    subject: 'someone',
    rule: { limit, window },
  });

  const countOf = async (scope: string) => {
    const row = await storage.db.kysely
      .selectFrom('rate_limits')
      .select('count')
      .where('key', '=', rateLimitKey(scope, 'someone'))
      .executeTakeFirst();
    return row ? Number(row.count) : undefined;
  };

  const challenge = (db: Db = storage.db) => {
    const id = `otp_${++serial}`;
    return {
      id,
      insert: new OtpRepository(db).insertWhenAllowed({
        id,
        project_id: projectId,
        identifier: 'someone@example.com',
        channel: 'email',
        code_hash: 'hash',
        max_attempts: 5,
        created_at: nowMs,
        expires_at: nowMs + 600_000,
        consumed_at: null,
      }),
    };
  };

  const stored = async (id: string) =>
    (await storage.db.kysely
      .selectFrom('otp_challenges')
      .select('id')
      .where('id', '=', id)
      .executeTakeFirst()) !== undefined;

  const steps = (own: number, shared: number, budget: number) => [
    [hit('own-a', own), hit('own-b', own + 10)],
    [],
    [hit('shared', shared)],
    [hit('budget-hour', budget), hit('budget-day', budget, 86_400)],
  ];

  test('all allowed: every step counted, in order, and the row stored', async () => {
    const limiter = new RateLimiter(storage.db, now);
    const { id, insert } = challenge();
    const { counted, results } = await limiter.hitSteps(steps(5, 5, 5), insert);
    assert.deepEqual(
      counted.map((h) => h.scope),
      ['own-a', 'own-b', 'shared', 'budget-hour', 'budget-day'],
    );
    assert.deepEqual(
      results.map((r) => [r.allowed, r.count, r.retryAfter]),
      [
        [true, 1, 60],
        [true, 1, 60],
        [true, 1, 60],
        [true, 1, 60],
        [true, 1, 86_400],
      ],
    );
    assert.ok(await stored(id));
  });

  test('a refused step stops the steps after it and the insert', async () => {
    const limiter = new RateLimiter(storage.db, now);
    await limiter.hitSteps(steps(1, 5, 5), challenge().insert);
    // The caller's own window is spent: the shared windows and the budgets are not touched.
    const second = challenge();
    const first = await limiter.hitSteps(steps(1, 5, 5), second.insert);
    assert.deepEqual(
      first.counted.map((h) => h.scope),
      ['own-a', 'own-b'],
    );
    assert.deepEqual(
      first.results.map((r) => r.allowed),
      [false, true],
    );
    assert.equal(await stored(second.id), false);
    assert.deepEqual(
      [await countOf('own-a'), await countOf('shared'), await countOf('budget-hour')],
      [2, 1, 1],
    );
    // The shared window refuses: the budgets are not touched.
    const third = challenge();
    const refused = await limiter.hitSteps(steps(10, 1, 5), third.insert);
    assert.deepEqual(
      refused.counted.map((h) => h.scope),
      ['own-a', 'own-b', 'shared'],
    );
    assert.deepEqual(
      refused.results.map((r) => r.allowed),
      [true, true, false],
    );
    assert.equal(await stored(third.id), false);
    assert.deepEqual([await countOf('shared'), await countOf('budget-hour')], [2, 1]);
    // A window that has ended starts again from one.
    nowMs += 61_000;
    const later = challenge();
    const again = await limiter.hitSteps(steps(1, 1, 5), later.insert);
    assert.deepEqual(
      again.results.map((r) => [r.allowed, r.count]),
      [
        [true, 1],
        [true, 1],
        [true, 1],
        [true, 1],
        // The day's budget, counted by the first call alone: the refused ones never reached it.
        [true, 2],
      ],
    );
    assert.ok(await stored(later.id));
  });

  test('concurrent callers on two connections: exactly the limit gets through, and only they count later steps', async () => {
    const limiters = dbs.map((db) => new RateLimiter(db, now));
    const calls = Array.from({ length: 20 }, (_, i) => {
      const { id, insert } = challenge(dbs[i % 2]!);
      return { id, done: limiters[i % 2]!.hitSteps([[hit('own', 5)], [hit('shared', 100)]], insert) };
    });
    const outcomes = await Promise.all(calls.map((c) => c.done));
    const admitted = outcomes.filter((o) => o.results.every((r) => r.allowed));
    assert.equal(admitted.length, 5);
    assert.equal(await countOf('own'), 20);
    assert.equal(await countOf('shared'), 5);
    const storedIds = await Promise.all(calls.map((c) => stored(c.id)));
    assert.equal(storedIds.filter(Boolean).length, 5);
    // Stored exactly for the calls that were admitted.
    assert.deepEqual(
      storedIds,
      outcomes.map((o) => o.results.every((r) => r.allowed)),
    );
  });

  test('the same window twice is refused before anything is counted', async () => {
    const limiter = new RateLimiter(storage.db, now);
    await assert.rejects(limiter.hitSteps([[hit('twice', 5)], [hit('twice', 5)]]), /same window twice/);
    assert.equal(await countOf('twice'), undefined);
  });
});
