/**
 * `GET /v1/stats` reports the project's OTP send budgets as they stand (issue 33, the console's
 * overview): per channel and window, what has been used, the limit (null when off) and when the
 * window ends. Reading them counts nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

interface Budget {
  channel: 'email' | 'sms';
  period: 'hour' | 'day';
  used: number;
  limit: number | null;
  resets_at: string | null;
}

eachDialect('GET /v1/stats: OTP send budgets', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, {
      env: {
        ...RELAXED_LIMITS,
        TESSERA_EMAIL_BUDGET_HOURLY: '3',
        TESSERA_EMAIL_BUDGET_DAILY: '500',
        TESSERA_SMS_BUDGET_DAILY: '0',
      },
    });
  });
  after(() => server.close());

  const budgets = async () => {
    const stats = await server.request('GET', '/v1/stats', {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(stats.status, 200, stats.text);
    const list = stats.body.otp_budgets as Budget[];
    const of = (channel: Budget['channel'], period: Budget['period']) =>
      list.find((b) => b.channel === channel && b.period === period)!;
    return { list, of };
  };
  const start = (identifier: string) =>
    server.request('POST', '/v1/auth/otp/start', {
      body: { identifier },
      headers: { api_key_id: server.project.api_key_id },
    });

  test('each channel’s hour and day: used, limit and window end; a refused send is not counted', async () => {
    const before = Date.now();
    const fresh = await budgets();
    assert.equal(fresh.list.length, 4);
    assert.deepEqual(fresh.of('email', 'hour'), {
      channel: 'email',
      period: 'hour',
      used: 0,
      limit: 3,
      resets_at: null,
    });
    assert.equal(fresh.of('sms', 'hour').limit, 200);
    assert.equal(fresh.of('sms', 'day').limit, null, 'a budget set to 0 is off');

    for (let i = 0; i < 3; i++) assert.equal((await start(uniqueEmail('budget'))).status, 200);
    // The hourly budget is spent: the fourth is refused, and its unit given back.
    assert.equal((await start(uniqueEmail('budget'))).status, 429);
    const spent = await budgets();
    const hour = spent.of('email', 'hour');
    assert.equal(hour.used, 3);
    const resets = Date.parse(hour.resets_at!);
    assert.ok(resets > before && resets <= Date.now() + 3_600_000, hour.resets_at!);
    assert.equal(spent.of('email', 'day').used, 3);
    assert.equal(spent.of('email', 'day').limit, 500);
    assert.equal(spent.of('sms', 'hour').used, 0);
    // Reading counted nothing.
    assert.equal((await budgets()).of('email', 'hour').used, 3);
  });
});
