import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../src/logger.js';
import { describePostgres, postgresUrl } from '../helpers/harness.js';

interface LogLine {
  err: { code: string };
  smtp: { code: string };
}

/** A logger writing into an array, and the parsed lines. */
function capture() {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => lines.push(line) });
  return { logger, lines, parsed: () => lines.map((line) => JSON.parse(line) as LogLine) };
}

test('a one-time code under any key named code is redacted', () => {
  const { logger, lines } = capture();
  logger.info({ message: { code: '493817' } }, 'x');
  logger.info({ otp: { code: 'ab12cd' } }, 'x');
  assert.ok(!lines.join('').includes('493817'), lines.join(''));
  assert.ok(!lines.join('').includes('ab12cd'), lines.join(''));
});

test('error codes stay readable: a system error, nodemailer details', () => {
  const { logger, parsed } = capture();
  const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code: 'ECONNREFUSED' });
  logger.warn({ err: error }, 'x');
  logger.warn({ smtp: { code: 'EAUTH', command: 'AUTH PLAIN', responseCode: 535 } }, 'x');
  const [first, second] = parsed();
  assert.equal(first!.err.code, 'ECONNREFUSED');
  assert.equal(second!.smtp.code, 'EAUTH');
});

describePostgres('node-postgres errors in the log', () => {
  test('a constraint violation keeps its SQLSTATE but not the values its detail quotes', async () => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    const { logger, lines, parsed } = capture();
    try {
      await client.query('create temporary table secrets (name text unique, secret text not null)');
      await client.query(`insert into secrets values ('first', 's3cret-value-one')`);
      for (const insert of [
        `insert into secrets values ('first', 'x')`, // unique: Key (name)=(first) already exists.
        `insert into secrets values ('s3cret-value-two', null)`, // not null: Failing row contains (…).
      ]) {
        const error = await client.query(insert).then(
          () => assert.fail('expected a constraint violation'),
          (e: unknown) => e,
        );
        assert.match(String((error as { detail?: unknown }).detail), /first|s3cret-value-two/);
        logger.error({ err: error }, 'unexpected error');
      }
    } finally {
      await client.end();
    }
    const text = lines.join('');
    assert.ok(!text.includes('s3cret-value-two'), text);
    assert.ok(!text.includes('(first)'), text);
    assert.deepEqual(
      parsed().map((line) => line.err.code),
      ['23505', '23502'],
    );
  });
});
