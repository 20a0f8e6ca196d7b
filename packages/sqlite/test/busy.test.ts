import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { SqliteBusyError } from '../src/index.js';
import { insert, openTestDatabase, type TestDatabase } from './helpers.js';

let t: TestDatabase;
beforeEach(async () => {
  t = await openTestDatabase({ busyTimeoutMs: 300 });
});
afterEach(() => t.cleanup());

/** Counts timer ticks meanwhile: a wait that blocked the thread would let none through. */
function tickCounter(): { stop(): number } {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  return {
    stop() {
      clearInterval(timer);
      return ticks;
    },
  };
}

test('the busy wait gives up at its limit with SqliteBusyError, without blocking the thread', {
  timeout: 10_000,
}, async () => {
  t.other.exec('begin immediate'); // another connection holds the write lock
  const ticks = tickCounter();
  const started = performance.now();
  const outcomes = await Promise.allSettled([insert(t.db, 'a'), insert(t.db, 'b')]);
  const waited = performance.now() - started;
  const ticked = ticks.stop();
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 'rejected');
    const error = (outcome as PromiseRejectedResult).reason;
    assert.ok(error instanceof SqliteBusyError, `not a SqliteBusyError: ${error}`);
    assert.equal(error.code, 'SQLITE_BUSY');
    assert.equal(
      error.message,
      'the SQLite database stayed locked by another connection for 300 ms (busyTimeoutMs)',
    );
  }
  assert.ok(waited >= 290 && waited < 2000, `gave up after ${Math.round(waited)} ms`);
  assert.ok(ticked >= 10, `the thread was blocked (${ticked} ticks in ${Math.round(waited)} ms)`);
  // Readers are not writers: a read does not wait for the lock.
  assert.deepEqual((await sql<{ n: number }>`select count(*) as n from t`.execute(t.db)).rows, [{ n: 0 }]);

  t.other.exec('rollback');
  await insert(t.db, 'after the lock');
  assert.deepEqual(t.committed(), ['after the lock']);
});

test('a write waits for a lock released within the limit, then goes through', {
  timeout: 10_000,
}, async () => {
  t.other.exec('begin immediate');
  setTimeout(() => t.other.exec('commit'), 100);
  const started = performance.now();
  await insert(t.db, 'waited');
  assert.ok(performance.now() - started >= 90, 'the write did not wait for the lock');
  assert.deepEqual(t.committed(), ['waited']);
});
