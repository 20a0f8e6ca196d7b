import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { prepared } from '../../src/db/prepared.js';
import { createStorage, eachDialect, type TestStorage } from '../helpers/harness.js';

eachDialect('prepared queries', (dialect) => {
  let storage: TestStorage;
  beforeEach(async () => {
    storage = await createStorage(dialect);
  });
  afterEach(() => storage.cleanup());

  const hit = prepared((db, key: string, count: number, resetAt: number) =>
    db
      .insertInto('rate_limits')
      .values({ key, count, reset_at: resetAt })
      .returning(['key', 'count', 'reset_at']),
  );
  const byKey = prepared((db, key: string) =>
    db.selectFrom('rate_limits').select(['key', 'count']).where('key', '=', key).where('count', '>', 0),
  );

  test('compiled once, run with each call’s values, on the database and inside a transaction', async () => {
    const { kysely } = storage.db;
    const first = await hit(kysely, 'a', 1, 100);
    assert.deepEqual(
      first.rows.map((r) => [r.key, Number(r.count), Number(r.reset_at)]),
      [['a', 1, 100]],
    );
    await kysely.transaction().execute(async (trx) => {
      await hit(trx, 'b', 2, 200);
      assert.equal(Number((await byKey(trx, 'b')).rows[0]?.count), 2);
    });
    // Values never leak from one call into the next; a constant of the query stays (count > 0).
    assert.deepEqual(
      (await byKey(kysely, 'a')).rows.map((r) => r.key),
      ['a'],
    );
    assert.deepEqual((await byKey(kysely, 'zzz')).rows, []);
    // A rolled-back transaction leaves nothing.
    await assert.rejects(
      kysely.transaction().execute(async (trx) => {
        await hit(trx, 'c', 3, 300);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual((await byKey(kysely, 'c')).rows, []);
  });

  test('an argument that does not become a parameter is refused when first built', async () => {
    // A column name is no parameter: the query would not follow the argument.
    const raw = prepared((db, column: string) =>
      db.selectFrom('rate_limits').select(sql.ref<string>(column).as('v')),
    );
    await assert.rejects(raw(storage.db.kysely, 'key'), /argument 0 is not a parameter/);
  });
});
