import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { insert, openTestDatabase, type TestDatabase } from './helpers.js';

let t: TestDatabase;
beforeEach(async () => {
  t = await openTestDatabase();
});
afterEach(() => t.cleanup());

test('a failed commit rejects every statement of its batch, and none of its writes stays', async () => {
  const { db } = t;
  await sql`create table parent (id integer primary key)`.execute(db);
  await sql`create table child (id integer primary key, parent_id integer references parent (id) deferrable initially deferred)`.execute(
    db,
  );
  // Issued in one turn of the event loop: one batch. The orphan's own statement succeeds (its
  // foreign key is checked at commit) and makes the commit fail.
  const outcomes = await Promise.allSettled([
    insert(db, 'plain'),
    sql`insert into child (id, parent_id) values (1, 42)`.execute(db),
    db.transaction().execute((trx) => insert(trx, 'in a transaction')),
    sql`select count(*) as n from t`.execute(db),
  ]);
  for (const [i, outcome] of outcomes.entries()) {
    assert.equal(outcome.status, 'rejected', `statement ${i} was answered as done`);
    assert.match(String((outcome as PromiseRejectedResult).reason), /FOREIGN KEY constraint failed/);
  }
  assert.deepEqual(t.committed(), []);
  assert.equal(t.other.prepare('select count(*) from child').pluck().get(), 0);
  // The next batch starts clean.
  await insert(db, 'after');
  assert.deepEqual(t.committed(), ['after']);
});

test('a rolled-back transaction undoes only its own writes, not those of other requests in its batch', async () => {
  const { db } = t;
  const events: string[] = [];
  const outcomes = await Promise.allSettled([
    insert(db, 'plain before').then(() => events.push('plain before answered')),
    db.transaction().execute(async (trx) => {
      await insert(trx, 'rolled back');
      events.push('rolled back');
      throw new Error('changed my mind');
    }),
    db.transaction().execute((trx) => insert(trx, 'kept transaction')),
    insert(db, 'plain after'),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
  );
  assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /changed my mind/);
  // The rollback happened before the first write was answered: both were in one batch.
  assert.deepEqual(events, ['rolled back', 'plain before answered']);
  assert.deepEqual(t.committed().sort(), ['kept transaction', 'plain after', 'plain before']);
});

test('a read issued while a batch is open is answered after the commit, and sees the committed data', async () => {
  const { db } = t;
  let read: Promise<{ names: string[]; committedThen: string[] }> | undefined;
  await db.transaction().execute(async (trx) => {
    await insert(trx, 'written');
    // The batch holds the write, not committed yet; this read runs once the transaction ends.
    read = sql<{ name: string }>`select name from t`.execute(db).then((result) => ({
      names: result.rows.map((r) => r.name),
      // What another connection sees when the read is answered: only what is committed.
      committedThen: t.committed(),
    }));
  });
  const answered = await read!;
  assert.deepEqual(answered.names, ['written']);
  assert.deepEqual(answered.committedThen, ['written']);
});

test('a statement that fails alone (a constraint) rejects alone: the rest of its batch commits', async () => {
  const { db } = t;
  await insert(db, 'first');
  const outcomes = await Promise.allSettled([
    insert(db, 'second'),
    sql`insert into t (id, name) values (1, 'duplicate key')`.execute(db),
    insert(db, 'third'),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.deepEqual(t.committed().sort(), ['first', 'second', 'third']);
});
