import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Delivery, OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import { DeliveryError } from '../../src/modules/otp/delivery/delivery.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import { eachDialect, startServer, type TestServer } from '../helpers/harness.js';
import { assertProblem, assertRateLimited } from '../helpers/sign-in-methods.js';

// Regression tests of issue 12, "SMS pumping": codes asked for many numbers (which an attacker's
// carrier is paid for) were limited only per number, so 40 numbers from one IP got 40 messages,
// and a failed delivery gave its counts back. Each client below has its own address (one trusted
// proxy hop), as a botnet would.
const ENV = { TESSERA_TRUST_PROXY: '1' };

/** US numbers in 40 different ranges (area codes): the per-range limit never meets two of them. */
const AREA_CODES = [
  201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219, 224, 225, 228, 229,
  231, 234, 239, 240, 248, 251, 252, 253, 254, 256, 260, 262, 267, 269, 270, 272, 276, 281, 301,
];
const spreadNumber = (i: number) => `+1${AREA_CODES[i]}5550123`;
/** US numbers in one range (+1 415 555 01xx): what a pumping carrier's block looks like. */
const rangeNumber = (i: number) => `+1415555${String(100 + i).padStart(4, '0')}`;
const clientIp = (i: number) => `198.51.100.${i + 1}`;

function start(
  server: TestServer,
  identifier: string,
  ip: string,
  project: ProjectCredentials = server.project,
) {
  return server.request('POST', '/v1/auth/otp/start', {
    body: { identifier },
    headers: { api_key_id: project.api_key_id, 'x-forwarded-for': ip },
  });
}

const smsSent = (server: TestServer) => server.outbox.list().filter((m) => m.channel === 'sms').length;

/** The value of `tessera_otp_sends_total{channel,outcome}` (0 when absent). */
async function sends(server: TestServer, channel: string, outcome: string): Promise<number> {
  const text = (await server.request('GET', '/metrics')).text;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`tessera_otp_sends_total{channel="${channel}",outcome="${outcome}"} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

eachDialect('SMS pumping', (dialect) => {
  test('regression: 40 numbers from 40 addresses spend the project hourly budget, then 429', async () => {
    const clock = { t: Date.now() };
    const server = await startServer(dialect, {
      env: { ...ENV, TESSERA_SMS_BUDGET_HOURLY: '25', TESSERA_SMS_BUDGET_DAILY: '35' },
      now: () => clock.t,
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) {
        const answer = await start(server, spreadNumber(i), clientIp(i));
        statuses.push(answer.status);
        if (i >= 25) {
          assertRateLimited(answer, 'rate_limited', 3600);
          assert.match(answer.body.detail, /too many sign-in text messages this hour/);
        }
      }
      assert.deepEqual(statuses, [...Array(25).fill(200), ...Array(15).fill(429)]);
      assert.equal(smsSent(server), 25);
      assert.equal(await sends(server, 'sms', 'sent'), 25);
      assert.equal(await sends(server, 'sms', 'budget_exceeded'), 15);

      // E-mail has a budget of its own.
      const email = await start(server, 'ada@example.com', clientIp(99));
      assert.equal(email.status, 200, email.text);

      // A refused number's own limits were given back: once the hour has passed it gets its code
      // at once, until the daily budget (35) is spent too.
      clock.t += 3601_000;
      for (let i = 25; i < 35; i++)
        assert.equal((await start(server, spreadNumber(i), clientIp(i))).status, 200);
      const daily = await start(server, spreadNumber(35), clientIp(35));
      assertRateLimited(daily, 'rate_limited', 86400);
      assert.match(daily.body.detail, /today/);
      assert.equal(smsSent(server), 35);
    } finally {
      await server.close();
    }
  });

  test('regression: with the default limits, 40 numbers of one range get 10 messages a minute', async () => {
    const clock = { t: Date.now() };
    const server = await startServer(dialect, { env: ENV, now: () => clock.t });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await start(server, rangeNumber(i), clientIp(i))).status);
      assert.deepEqual(statuses, [...Array(10).fill(200), ...Array(30).fill(429)]);
      assert.equal(smsSent(server), 10);
      assert.equal(await sends(server, 'sms', 'prefix_throttled'), 30);
      const refused = await start(server, rangeNumber(40), clientIp(40));
      assertRateLimited(refused, 'rate_limited', 60);
      assert.match(refused.body.detail, /similar numbers/);
      // Other ranges are not held up…
      assert.equal((await start(server, spreadNumber(0), clientIp(41))).status, 200);
      // …and the range opens again after its minute.
      clock.t += 61_000;
      assert.equal((await start(server, rangeNumber(40), clientIp(40))).status, 200);
    } finally {
      await server.close();
    }
  });

  test('regression: a failed delivery does not give back the project budget', async () => {
    const failing = new Set([spreadNumber(0), spreadNumber(1), spreadNumber(2), spreadNumber(3)]);
    const delivered: OtpMessage[] = [];
    const delivery: Delivery = {
      async send(message) {
        if (failing.has(message.to)) throw new DeliveryError('provider answered 502');
        delivered.push(message);
      },
      async notify() {},
      async close() {},
    };
    const server = await startServer(dialect, {
      env: { ...ENV, TESSERA_SMS_BUDGET_HOURLY: '5' },
      delivery,
    });
    try {
      for (let i = 0; i < 4; i++)
        assertProblem(await start(server, spreadNumber(i), clientIp(i)), 503, 'delivery_failed');
      // The real user may try again at once (the resend interval is given back)…
      assertProblem(await start(server, spreadNumber(0), clientIp(0)), 503, 'delivery_failed');
      // …but every attempt was handed to the provider, and the budget of 5 is spent.
      const refused = await start(server, spreadNumber(10), clientIp(10));
      assertRateLimited(refused, 'rate_limited', 3600);
      assert.equal(delivered.length, 0);
      assert.equal(await sends(server, 'sms', 'delivery_failed'), 5);
      assert.equal(await sends(server, 'sms', 'budget_exceeded'), 1);
    } finally {
      await server.close();
    }
  });

  test('regression: SMS to a country outside the allow-list is refused with 403 country_not_allowed', async () => {
    const server = await startServer(dialect, {
      env: { ...ENV, TESSERA_SMS_COUNTRIES: 'US,CA', TESSERA_SMS_BUDGET_HOURLY: '3' },
    });
    try {
      // London, Jamaica (+1 876 shares the US calling code), a satellite network with no country.
      for (const number of ['+442079460958', '+18765550123', '+881612345678']) {
        const answer = await start(server, number, clientIp(1));
        assertProblem(answer, 403, 'country_not_allowed');
        assert.match(answer.body.detail, /cannot be sent by SMS to phone numbers of this country/);
        assert.ok(!answer.text.includes(number.slice(1)), 'the answer quotes the number');
      }
      assert.equal(smsSent(server), 0);
      assert.equal(await sends(server, 'sms', 'country_blocked'), 3);
      // Refused numbers spent none of the budget of 3.
      for (const number of ['+14155552671', '+16135550123', '+12025550123']) {
        const answer = await start(server, number, clientIp(2));
        assert.equal(answer.status, 200, answer.text);
      }
      // E-mail is not affected.
      assert.equal((await start(server, 'ada@example.com', clientIp(3))).status, 200);

      // A project's own list replaces the server's: this one allows GB only, another every country.
      const british = await server.ctx.projects.create({ name: 'uk', smsCountries: 'gb' });
      const everywhere = await server.ctx.projects.create({ name: 'world', smsCountries: '*' });
      const closed = await server.ctx.projects.create({ name: 'email-only', smsCountries: '' });
      assert.equal((await start(server, '+442079460958', clientIp(4), british)).status, 200);
      assertProblem(await start(server, '+14155550100', clientIp(4), british), 403, 'country_not_allowed');
      assert.equal((await start(server, '+881612345678', clientIp(4), everywhere)).status, 200);
      assertProblem(await start(server, '+14155550101', clientIp(4), closed), 403, 'country_not_allowed');
      assert.equal((await start(server, 'bob@example.com', clientIp(4), closed)).status, 200);
    } finally {
      await server.close();
    }
  });

  test('a project country list that is not ISO 3166-1 is refused', async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      await assert.rejects(
        server.ctx.projects.create({ name: 'bad', smsCountries: 'USA' }),
        (error: unknown) => {
          assert.match(String(error), /not a two-letter country code/);
          return true;
        },
      );
      assert.equal(await server.ctx.projects.findByName('bad'), undefined);
    } finally {
      await server.close();
    }
  });
});
