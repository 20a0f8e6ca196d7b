import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompiledQuery, sql } from 'kysely';
import { SqliteClosedError } from '../src/index.js';
import { insert, openTestDatabase, type TestDatabase } from './helpers.js';

let t: TestDatabase;
beforeEach(async () => {
  t = await openTestDatabase();
});
afterEach(() => t.cleanup());

test('closing lets statements in flight finish first: the running transaction and writes already issued', async () => {
  const { db } = t;
  const transaction = db.transaction().execute(async (trx) => {
    await insert(trx, 'transaction 1');
    await sleep(30); // close() is called meanwhile
    await insert(trx, 'transaction 2');
  });
  await sleep(5);
  const waiting = insert(db, 'issued before close'); // waits for the transaction's turn to end
  const closed = db.destroy();
  await Promise.all([transaction, waiting, closed]);
  assert.deepEqual(t.committed().sort(), ['issued before close', 'transaction 1', 'transaction 2']);
});

test('nothing runs after close: every statement is refused with SqliteClosedError, nothing is written', async () => {
  const { db, dialect } = t;
  // A connection handle taken before closing (Kysely itself refuses new acquisitions).
  const driver = dialect.createDriver();
  const handle = await driver.acquireConnection();
  await insert(db, 'before close');
  await db.destroy();
  await assert.rejects(
    handle.executeQuery(CompiledQuery.raw("insert into t (name) values ('after close')")),
    SqliteClosedError,
  );
  await assert.rejects(driver.beginTransaction(handle, {}), SqliteClosedError);
  await assert.rejects(driver.acquireConnection(), SqliteClosedError);
  await assert.rejects(dialect.ping(), SqliteClosedError);
  await assert.rejects(sql`select 1`.execute(db), /destroyed/);
  assert.deepEqual(t.committed(), ['before close']);
});
