import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { SlowTransaction } from '../src/index.js';
import { insert, openTestDatabase, type TestDatabase } from './helpers.js';

let t: TestDatabase | undefined;
afterEach(() => t?.cleanup());

test('a transaction that holds the database past the threshold is reported, a quick one is not', async () => {
  const reports: SlowTransaction[] = [];
  t = await openTestDatabase({ slowTransactionMs: 50, onSlowTransaction: (r) => reports.push(r) });
  const { db } = t;
  await db.transaction().execute((trx) => insert(trx, 'quick'));
  assert.equal(reports.length, 0);

  await db.transaction().execute(async function stallingTransaction(trx) {
    await insert(trx, 'slow');
    await sleep(80); // not the database: e.g. an HTTP call made inside the transaction
  });
  assert.equal(reports.length, 1);
  const [report] = reports;
  assert.ok(report!.heldMs >= 75, `heldMs ${report!.heldMs}`);
  assert.equal(report!.thresholdMs, 50);
  assert.match(report!.stack ?? '', /slow-transaction\.test\.ts/);
});

test('while a transaction holds the database every other statement waits, reads included', async () => {
  t = await openTestDatabase();
  const { db } = t;
  let readAt = 0;
  const started = performance.now();
  const transaction = db.transaction().execute(async (trx) => {
    await insert(trx, 'x');
    await sleep(60);
  });
  await sleep(5);
  await sql`select 1`.execute(db).then(() => {
    readAt = performance.now() - started;
  });
  await transaction;
  assert.ok(readAt >= 55, `the read was answered after ${Math.round(readAt)} ms`);
});
