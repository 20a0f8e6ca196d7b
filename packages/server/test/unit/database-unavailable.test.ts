import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCodes } from '@tessera/core';
import {
  describeDatabaseError,
  isConnectionPoisoned,
  isDatabaseUnavailable,
} from '../../src/db/unavailable.js';
import { DatabaseUnavailableError, TesseraError, toKnownError } from '../../src/errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  test('PostgreSQL going away, restarting, failing over or timing out', () => {
    for (const code of [
      '57P01',
      '57P02',
      '57P03',
      '57014',
      '55P03',
      '53300',
      '25006',
      '08006',
      '08001',
      '08P01',
    ])
      assert.ok(isDatabaseUnavailable(withCode(code)), code);
  });

  test('socket errors, driver messages without a code, and SQLite busy past its wait', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND'])
      assert.ok(isDatabaseUnavailable(withCode(code)), code);
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      'Query read timeout',
      'Cannot use a pool after calling end on the pool',
    ])
      assert.ok(isDatabaseUnavailable(new Error(message)), message);
    assert.ok(isDatabaseUnavailable(withCode('SQLITE_BUSY')));
    assert.ok(isDatabaseUnavailable(withCode('SQLITE_BUSY_SNAPSHOT')));
    assert.ok(
      isDatabaseUnavailable(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'x')),
    );
  });

  test('bugs, bad data and everything else are not "unavailable"', () => {
    for (const code of ['23505', '23503', '42P01', '42601', '40001', 'SQLITE_CONSTRAINT', 'SQLITE_ERROR'])
      assert.ok(!isDatabaseUnavailable(withCode(code)), code);
    assert.ok(!isDatabaseUnavailable(new Error('Connection terminated unexpectedly, or not')));
    assert.ok(!isDatabaseUnavailable(new TypeError('x is undefined')));
    assert.ok(!isDatabaseUnavailable(undefined));
    assert.ok(!isDatabaseUnavailable('ECONNREFUSED'));
    assert.ok(!isDatabaseUnavailable(new AggregateError([], 'x')));
    assert.ok(!isDatabaseUnavailable(new AggregateError([withCode('ECONNREFUSED'), new Error('bug')], 'x')));
  });

  test('only a client-side timeout or a read-only standby poisons the connection', () => {
    assert.ok(isConnectionPoisoned(new Error('Query read timeout')));
    assert.ok(isConnectionPoisoned(withCode('25006')));
    assert.ok(!isConnectionPoisoned(withCode('57014')));
    assert.ok(!isConnectionPoisoned(withCode('23505')));
  });

  test('the log description is the code and the message, nothing else of the error', () => {
    const error = Object.assign(withCode('57P01', 'terminating connection due to administrator command'), {
      client: { password: 'hunter2' },
    });
    assert.deepEqual(describeDatabaseError(error), {
      code: '57P01',
      reason: 'terminating connection due to administrator command',
    });
  });
});

describe('toKnownError', () => {
  test('a database that is away becomes 503 service_unavailable with Retry-After', () => {
    const cause = withCode('57P01', 'terminating connection due to administrator command');
    const known = toKnownError(cause);
    assert.ok(known instanceof DatabaseUnavailableError);
    assert.equal(known.statusCode, 503);
    assert.equal(known.code, ErrorCodes.serviceUnavailable);
    assert.equal(known.headers['retry-after'], '5');
    assert.equal(known.cause, cause);
    const problem = known.toProblem();
    assert.equal(problem.status, 503);
    assert.equal(problem.retry_after, 5);
    // The public text says nothing of the driver's error.
    assert.doesNotMatch(JSON.stringify(problem), /administrator|57P01/);
  });

  test('a deadlock or serialisation failure is a 503 to retry at once, not a 500', () => {
    for (const code of ['40P01', '40001']) {
      const cause = withCode(code, 'deadlock detected');
      const known = toKnownError(cause);
      assert.ok(known, code);
      assert.equal(known.statusCode, 503);
      assert.equal(known.code, ErrorCodes.serviceUnavailable);
      assert.equal(known.headers['retry-after'], '1');
      assert.equal(known.toProblem().retry_after, 1);
      assert.equal(known.cause, cause);
      assert.doesNotMatch(JSON.stringify(known.toProblem()), /deadlock|40P01|40001/);
    }
  });

  test('a TesseraError stays itself; anything else is not known', () => {
    const error = new TesseraError(404, ErrorCodes.notFound, 'x');
    assert.equal(toKnownError(error), error);
    assert.equal(toKnownError(new TypeError('x')), undefined);
    assert.equal(toKnownError(withCode('23505')), undefined);
  });
});
