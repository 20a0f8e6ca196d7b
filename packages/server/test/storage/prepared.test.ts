import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { connect } from '../../src/db/connect.js';
import { prepared, statementName, together } from '../../src/db/prepared.js';
import { createStorage, eachDialect, postgresUrl, type TestStorage } from '../helpers/harness.js';

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

  const bump = prepared((db, key: string) =>
    db.updateTable('rate_limits').set({ count: sql<number>`count + 1` }).where('key', '=', key),
  );

  test('together: several writes, each with its own values, stored all or none', async () => {
    const { kysely } = storage.db;
    await hit(kysely, 'x', 10, 100);
    await together(kysely, [hit.write('a', 1, 100), bump.write('x'), hit.write('b', 2, 200)]);
    const rows = async () =>
      (
        await kysely.selectFrom('rate_limits').select(['key', 'count', 'reset_at']).orderBy('key').execute()
      ).map((r) => [r.key, Number(r.count), Number(r.reset_at)]);
    assert.deepEqual(await rows(), [
      ['a', 1, 100],
      ['b', 2, 200],
      ['x', 11, 100],
    ]);
    // A failing write (a duplicate key) undoes the others.
    await assert.rejects(together(kysely, [bump.write('x'), hit.write('c', 3, 300), hit.write('a', 9, 900)]));
    assert.deepEqual(await rows(), [
      ['a', 1, 100],
      ['b', 2, 200],
      ['x', 11, 100],
    ]);
    // Inside a transaction, with it.
    await kysely.transaction().execute(async (trx) => {
      await together(trx, [bump.write('a'), bump.write('b')]);
    });
    assert.deepEqual(
      (await rows()).map((r) => r[1]),
      [2, 3, 11],
    );
    await together(kysely, []);
  });
});

test('PostgreSQL runs prepared queries as named prepared statements, each connection preparing once', {
  skip: postgresUrl ? false : 'needs PostgreSQL: set TESSERA_TEST_DATABASE_URL',
}, async () => {
  const storage = await createStorage('postgres');
  // One connection: the session whose prepared statements pg_prepared_statements lists.
  const db = await connect(storage.url, { schema: await schemaOf(storage), poolSize: 1 });
  try {
    const count = prepared((k, key: string) =>
      k.selectFrom('rate_limits').select('count').where('key', '=', key),
    );
    const all = prepared((k, key: string) => k.selectFrom('rate_limits').selectAll().where('key', '=', key));
    for (let i = 0; i < 3; i++) {
      await count(db.kysely, 'k');
      await all(db.kysely, 'k');
    }
    const named = await sql<{
      name: string;
      statement: string;
    }>`select name, statement from pg_prepared_statements`.execute(db.kysely);
    const countText = count.compiledFor(db.kysely, 1).sql;
    const name = statementName(countText);
    assert.ok(name);
    assert.deepEqual(
      named.rows.filter((r) => r.name === name).map((r) => r.statement),
      [countText],
    );
    // `select *` would change shape with a migration: it is not named.
    assert.equal(statementName(all.compiledFor(db.kysely, 1).sql), undefined);
  } finally {
    await db.close();
    await storage.cleanup();
  }
});

test('PostgreSQL: together() runs its writes in the order given (they lock rows in that order)', {
  skip: postgresUrl ? false : 'needs PostgreSQL: set TESSERA_TEST_DATABASE_URL',
}, async () => {
  const storage = await createStorage('postgres');
  try {
    const { kysely } = storage.db;
    await sql`create sequence write_order`.execute(kysely);
    const numbered = prepared(
      (_db, key: string, sequence: string) =>
        sql`insert into rate_limits (key, count, reset_at) values (${key}, nextval(${sequence}::regclass), 0)`,
    );
    const keys = ['first', 'second', 'third', 'fourth'];
    await together(
      kysely,
      keys.map((k) => numbered.write(k, 'write_order')),
    );
    const rows = await kysely.selectFrom('rate_limits').select(['key', 'count']).orderBy('count').execute();
    assert.deepEqual(
      rows.map((r) => r.key),
      keys,
    );
  } finally {
    await storage.cleanup();
  }
});

async function schemaOf(storage: TestStorage): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
    storage.db.kysely,
  );
  return rows[0]!.schema;
}
