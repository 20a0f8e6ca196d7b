import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DatabaseWaitError, waitForDatabase } from '../../src/main.js';

/** A database whose ping fails with `errors` in turn, then answers; a clock that only moves when slept. */
function fixture(errors: unknown[]) {
  let now = 0;
  let pings = 0;
  const slept: number[] = [];
  const logged: Array<{ level: string; fields: Record<string, unknown>; message: string }> = [];
  return {
    db: {
      async ping() {
        pings++;
        const error = errors.shift();
        if (error) throw error;
      },
    },
    clock: {
      now: () => now,
      async sleep(ms: number) {
        slept.push(ms);
        now += ms;
      },
    },
    logger: {
      warn: (fields: Record<string, unknown>, message: string) =>
        logged.push({ level: 'warn', fields, message }),
      info: (fields: Record<string, unknown>, message: string) =>
        logged.push({ level: 'info', fields, message }),
    },
    slept,
    logged,
    pings: () => pings,
  };
}

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const starting = () => Object.assign(new Error('the database system is starting up'), { code: '57P03' });

describe('waitForDatabase', () => {
  test('retries an unreachable or starting database with a growing delay, logging each attempt', async () => {
    const f = fixture([refused(), refused(), starting(), refused(), refused(), refused()]);
    await waitForDatabase(f.db, 60_000, f.logger as never, f.clock);
    assert.equal(f.pings(), 7);
    assert.deepEqual(f.slept, [500, 1000, 2000, 4000, 5000, 5000]);
    const warnings = f.logged.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 6);
    assert.deepEqual(warnings[2], {
      level: 'warn',
      fields: { code: '57P03', reason: 'the database system is starting up', attempt: 3, retryInMs: 2000 },
      message: 'database not reachable yet; retrying',
    });
    assert.deepEqual(f.logged.at(-1), {
      level: 'info',
      fields: { attempts: 7 },
      message: 'database reachable',
    });
  });

  test('gives up at TESSERA_DATABASE_WAIT with an error naming the variable', async () => {
    const f = fixture(Array.from({ length: 100 }, refused));
    await assert.rejects(waitForDatabase(f.db, 3_000, f.logger as never, f.clock), (error: unknown) => {
      assert.ok(error instanceof DatabaseWaitError);
      assert.equal(
        error.message,
        'the database did not answer within 3 s (TESSERA_DATABASE_WAIT): ECONNREFUSED',
      );
      return true;
    });
    // 500 + 1000 + 1500 (the rest of the 3 s): never past the bound.
    assert.deepEqual(f.slept, [500, 1000, 1500]);
  });

  test('a database that answers at once logs nothing; 0 s fails at the first refusal', async () => {
    const ok = fixture([]);
    await waitForDatabase(ok.db, 60_000, ok.logger as never, ok.clock);
    assert.deepEqual(ok.logged, []);
    const none = fixture([refused()]);
    await assert.rejects(waitForDatabase(none.db, 0, none.logger as never, none.clock), DatabaseWaitError);
    assert.deepEqual(none.slept, []);
  });

  test('an error that is not about reachability (a wrong password) fails at once', async () => {
    const wrongPassword = Object.assign(new Error('password authentication failed for user "tessera"'), {
      code: '28P01',
    });
    const f = fixture([wrongPassword]);
    await assert.rejects(
      waitForDatabase(f.db, 60_000, f.logger as never, f.clock),
      /password authentication failed/,
    );
    assert.equal(f.pings(), 1);
    assert.deepEqual(f.slept, []);
  });
});
