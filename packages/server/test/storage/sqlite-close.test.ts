import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { connect } from '../../src/db/connect.js';

test('closing SQLite lets a request still running finish its statements (regression: a 500 at shutdown)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-close-'));
  try {
    const db = await connect(`sqlite:${join(dir, 'close.db')}`);
    await sql`create table t (id integer primary key)`.execute(db.kysely);
    // A request's chain of statements, a few milliseconds apart, still going when close() starts.
    const request = (async () => {
      for (let i = 0; i < 5; i++) {
        await sql`insert into t default values`.execute(db.kysely);
        await sleep(10);
      }
      return (await sql<{ n: number }>`select count(*) as n from t`.execute(db.kysely)).rows[0]!.n;
    })();
    await sleep(5);
    const closed = db.close();
    assert.equal(Number(await request), 5);
    await closed;
    // Once closed, nothing runs any more.
    await assert.rejects(sql`select 1`.execute(db.kysely), /destroyed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
