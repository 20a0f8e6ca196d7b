import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Delivery, DeliveryError, type OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import {
  type Dialect,
  eachDialect,
  type StartOptions,
  startServer,
  type TestResponse,
  type TestServer,
} from '../helpers/harness.js';

/** Every server gets a roomy per-IP limit unless a test is about that limit. */
function boot(dialect: Dialect, options: StartOptions = {}): Promise<TestServer> {
  return startServer(dialect, { ...options, env: { TESSERA_RATE_LIMIT_IP: '1000/60', ...options.env } });
}

/** A clock the test moves by hand. */
function manualClock() {
  const clock = {
    t: Date.now(),
    now: () => clock.t,
    advance(seconds: number) {
      clock.t += seconds * 1000;
    },
  };
  return clock;
}

const keyOf = (server: TestServer, apiKeyId = server.project.api_key_id) => ({ api_key_id: apiKeyId });

function start(server: TestServer, identifier: unknown, headers: Record<string, string> = keyOf(server)) {
  return server.request('POST', '/v1/auth/otp/start', { body: { identifier }, headers });
}

function complete(
  server: TestServer,
  challengeId: string,
  code: string,
  getOAuthToken = true,
  headers: Record<string, string> = keyOf(server),
) {
  return server.request('POST', '/v1/auth/otp/complete', {
    body: { challenge_id: challengeId, code, getOAuthToken },
    headers,
  });
}

/** A 6-digit code that is certainly not `code`. */
function wrong(code: string, offset = 1): string {
  return String((Number(code) + offset) % 1_000_000).padStart(6, '0');
}

/** Starts a challenge and returns its id and the code that was sent. */
async function challenge(server: TestServer, identifier: string, to = identifier) {
  const started = await start(server, identifier);
  assert.equal(started.status, 200, started.text);
  return { id: started.body.challenge_id as string, code: server.lastCode(to) };
}

function headerNames(response: TestResponse): string[] {
  const names: string[] = [];
  response.headers.forEach((_value, name) => {
    names.push(name);
  });
  return names.sort();
}

function assertProblem(response: TestResponse, status: number, code: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(response.body.status, status);
  assert.equal(response.body.code, code);
  assert.equal(response.body.type, `https://tessera.dev/problems/${code}`);
  assert.equal(typeof response.body.detail, 'string');
}

eachDialect('OTP start', (dialect) => {
  test('answers the same shape for a new and an existing user', async () => {
    const clock = manualClock();
    const server = await boot(dialect, { now: clock.now });
    try {
      await server.signIn('known@example.com');
      clock.advance(30);
      const existing = await start(server, 'known@example.com');
      const fresh = await start(server, 'stranger@example.com');
      for (const answer of [existing, fresh]) {
        assert.equal(answer.status, 200, answer.text);
        assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
        assert.deepEqual(Object.keys(answer.body).sort(), [
          'challenge_id',
          'channel',
          'expires_in',
          'resend_after',
        ]);
        assert.equal(typeof answer.body.challenge_id, 'string');
      }
      const { challenge_id: a, ...restExisting } = existing.body;
      const { challenge_id: b, ...restFresh } = fresh.body;
      assert.notEqual(a, b);
      assert.deepEqual(restExisting, { channel: 'email', expires_in: 300, resend_after: 30 });
      assert.deepEqual(restFresh, restExisting);
      assert.deepEqual(headerNames(existing), headerNames(fresh));
    } finally {
      await server.close();
    }
  });

  test('lower-cases e-mail addresses in the outbox and in the tokens', async () => {
    const server = await boot(dialect);
    try {
      const started = await start(server, '  Ada.Lovelace@Example.COM ');
      assert.equal(started.status, 200, started.text);
      assert.equal(started.body.channel, 'email');
      const [sent] = server.outbox.list();
      assert.equal(sent?.to, 'ada.lovelace@example.com');
      assert.equal(sent?.channel, 'email');
      const done = await complete(server, started.body.challenge_id, sent!.code);
      assert.equal(done.status, 200, done.text);
      assert.equal(decodeJwt(done.body.oauth_token.access_token).identifier, 'ada.lovelace@example.com');
      assert.equal(decodeJwt(done.body.oauth_token.id_token).identifier, 'ada.lovelace@example.com');
    } finally {
      await server.close();
    }
  });

  test('normalises phone numbers to E.164 and sends them by SMS', async () => {
    const server = await boot(dialect, { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    try {
      const started = await start(server, '+44 (0)20 7946 0958');
      assert.equal(started.status, 200, started.text);
      assert.equal(started.body.channel, 'sms');
      const [sent] = server.outbox.list();
      assert.equal(sent?.to, '+442079460958');
      assert.equal(sent?.channel, 'sms');
      const done = await complete(server, started.body.challenge_id, sent!.code);
      assert.equal(done.status, 200, done.text);
      const claims = decodeJwt(done.body.oauth_token.access_token);
      assert.equal(claims.identifier, '+442079460958');
      // The same number written another way is the same user.
      const again = await server.signIn('0044 20 7946 0958');
      assert.equal(server.outbox.list()[0]?.to, '+442079460958');
      assert.equal(decodeJwt(again.access_token).sub, claims.sub);
    } finally {
      await server.close();
    }
  });

  test('refuses identifiers that are not an e-mail address or an international phone number', async () => {
    const server = await boot(dialect);
    try {
      const refused = [
        '4155552671', // no country code
        '020 7946 0958', // national format
        '+1 123', // too short to be a number
        'garbage',
        'ada@localhost',
        'ada lovelace@example.com',
        `${'a'.repeat(64)}@${'b'.repeat(240)}.com`, // longer than 254 characters
        '   ',
      ];
      for (const identifier of refused) {
        const answer = await start(server, identifier);
        assertProblem(answer, 400, 'invalid_identifier');
        if (identifier.trim()) assert.ok(!answer.text.includes(identifier.trim()), answer.text);
      }
      const noCountry = await start(server, '4155552671');
      assert.match(noCountry.body.detail, /country code/);
      assert.deepEqual(server.outbox.list(), []);
    } finally {
      await server.close();
    }
  });

  test('a second code within 30 s is refused with resend_too_soon and Retry-After', async () => {
    const clock = manualClock();
    const server = await boot(dialect, { now: clock.now });
    try {
      assert.equal((await start(server, 'ada@example.com')).status, 200);
      const soon = await start(server, 'ADA@example.com');
      assertProblem(soon, 429, 'resend_too_soon');
      assert.equal(soon.headers.get('retry-after'), '30');
      assert.equal(soon.body.retry_after, 30);
      clock.advance(10);
      const later = await start(server, 'ada@example.com');
      assertProblem(later, 429, 'resend_too_soon');
      assert.equal(later.headers.get('retry-after'), '20');
      // Another identifier is not held back.
      assert.equal((await start(server, 'bob@example.com')).status, 200);
      clock.advance(20);
      assert.equal((await start(server, 'ada@example.com')).status, 200);
      assert.equal(server.outbox.list().filter((m) => m.to === 'ada@example.com').length, 2);
      // One otp.sent per code that went out: the refused starts stored none.
      await server.ctx.audit.drain();
      const events = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select('id')
        .where('type', '=', 'otp.sent')
        .execute();
      assert.equal(events.length, 3);
    } finally {
      await server.close();
    }
  });

  test('TESSERA_RATE_LIMIT_OTP_START caps codes per identifier', async () => {
    const clock = manualClock();
    const server = await boot(dialect, {
      now: clock.now,
      env: { TESSERA_RATE_LIMIT_OTP_START: '3/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
    });
    try {
      for (const spelling of ['ada@example.com', 'Ada@Example.com', 'ADA@EXAMPLE.COM']) {
        assert.equal((await start(server, spelling)).status, 200);
      }
      const fourth = await start(server, 'ada@example.com');
      assertProblem(fourth, 429, 'rate_limited');
      assert.equal(fourth.headers.get('retry-after'), '900');
      assert.equal(server.outbox.list().length, 3);
      assert.equal((await start(server, 'bob@example.com')).status, 200);
      clock.advance(900);
      assert.equal((await start(server, 'ada@example.com')).status, 200);
    } finally {
      await server.close();
    }
  });

  // A stranger cycling sub-addresses (`ada+1@`, `ada+2@`, …) or Gmail's dots sent one inbox as
  // many codes as they liked: each spelling was an identifier with limits of its own.
  test('sub-addresses and Gmail spellings of one inbox share its send limits', async () => {
    const clock = manualClock();
    const server = await boot(dialect, {
      now: clock.now,
      env: { TESSERA_RATE_LIMIT_OTP_START: '3/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
    });
    try {
      for (const spelling of ['ada@example.com', 'ada+1@example.com', 'Ada+news@example.com']) {
        assert.equal((await start(server, spelling)).status, 200, spelling);
      }
      assertProblem(await start(server, 'ada+2@example.com'), 429, 'rate_limited');
      assertProblem(await start(server, 'ada@example.com'), 429, 'rate_limited');
      // Another mailbox of the same domain, and a look-alike that is one, are not held back.
      assert.equal((await start(server, 'adam+1@example.com')).status, 200);
      assert.equal((await start(server, 'a.da@example.com')).status, 200);
      for (const spelling of ['a.da@gmail.com', 'ada@googlemail.com', 'A.D.A+x@gmail.com']) {
        assert.equal((await start(server, spelling)).status, 200, spelling);
      }
      assertProblem(await start(server, 'ad.a@gmail.com'), 429, 'rate_limited');
      // Each code went to the address as typed; tags and dots are kept for delivery.
      assert.deepEqual(
        server.outbox
          .list()
          .map((m) => m.to)
          .reverse(),
        [
          'ada@example.com',
          'ada+1@example.com',
          'ada+news@example.com',
          'adam+1@example.com',
          'a.da@example.com',
          'a.da@gmail.com',
          'ada@googlemail.com',
          'a.d.a+x@gmail.com',
        ],
      );
      clock.advance(900);
      assert.equal((await start(server, 'ada+2@example.com')).status, 200);
    } finally {
      await server.close();
    }
  });

  test('a sub-address waits out the resend interval of its inbox, and is a user of its own', async () => {
    const clock = manualClock();
    const server = await boot(dialect, { now: clock.now });
    try {
      const plain = await challenge(server, 'ada@example.com');
      assertProblem(await start(server, 'ada+1@example.com'), 429, 'resend_too_soon');
      clock.advance(30);
      const tagged = await challenge(server, 'ada+1@example.com');
      const a = await complete(server, plain.id, plain.code);
      const b = await complete(server, tagged.id, tagged.code);
      assert.equal(a.status, 200, a.text);
      assert.equal(b.status, 200, b.text);
      const subjectOf = (r: TestResponse) =>
        decodeJwt((r.body.oauth_token as { access_token: string }).access_token).sub;
      assert.notEqual(subjectOf(a), subjectOf(b));
    } finally {
      await server.close();
    }
  });

  test('TESSERA_RATE_LIMIT_IP caps OTP requests per client address', async () => {
    const clock = manualClock();
    const server = await boot(dialect, { now: clock.now, env: { TESSERA_RATE_LIMIT_IP: '3/60' } });
    try {
      assert.equal((await start(server, 'a@example.com')).status, 200);
      assert.equal((await start(server, 'b@example.com')).status, 200);
      assertProblem(await complete(server, 'otp_unknown', '123456'), 400, 'challenge_not_found');
      const limited = await start(server, 'c@example.com');
      assertProblem(limited, 429, 'rate_limited');
      assert.equal(limited.headers.get('retry-after'), '60');
      // Counted before the API key is looked at.
      assertProblem(await start(server, 'c@example.com', {}), 429, 'rate_limited');
      assert.equal(server.outbox.list().length, 2);
      clock.advance(60);
      assert.equal((await start(server, 'c@example.com')).status, 200);
    } finally {
      await server.close();
    }
  });

  test('the outbox lists messages newest first with to, channel and code', async () => {
    const server = await boot(dialect);
    try {
      await start(server, 'first@example.com');
      await start(server, '+33 6 12 34 56 78');
      await start(server, 'third@example.com');
      const outbox = await server.request('GET', '/dev/outbox');
      assert.equal(outbox.status, 200);
      assert.equal(outbox.headers.get('cache-control'), 'no-store');
      assert.deepEqual(
        outbox.body.map((m: { to: string; channel: string }) => [m.to, m.channel]),
        [
          ['third@example.com', 'email'],
          ['+33612345678', 'sms'],
          ['first@example.com', 'email'],
        ],
      );
      for (const message of outbox.body) assert.match(message.code, /^\d{6}$/);
      assert.equal(outbox.body[0].code, server.lastCode('third@example.com'));
      assert.equal(outbox.body[2].code, server.lastCode('first@example.com'));
    } finally {
      await server.close();
    }
  });

  test('a delivery failure answers 503 delivery_failed without the code and refunds the limits', async () => {
    class FailingOnce implements Delivery {
      failed: OtpMessage[] = [];
      sent: OtpMessage[] = [];
      async send(message: OtpMessage): Promise<void> {
        if (this.failed.length === 0) {
          this.failed.push(message);
          throw new DeliveryError('provider answered 502');
        }
        this.sent.push(message);
      }
      async notify(): Promise<void> {}
      async close(): Promise<void> {}
    }
    const delivery = new FailingOnce();
    const server = await boot(dialect, { delivery });
    try {
      const failed = await start(server, 'ada@example.com');
      assertProblem(failed, 503, 'delivery_failed');
      assert.equal(delivery.failed.length, 1);
      const code = delivery.failed[0]!.code;
      assert.match(code, /^\d{6}$/);
      assert.ok(!failed.text.includes(code), 'the answer holds the code');
      assert.ok(!failed.body.detail.includes('502'), 'the provider error reached the client');
      assert.match(failed.body.detail, /e-mail could not be sent/);
      assert.equal(failed.body.challenge_id, undefined);
      // No code went out, so no otp.sent (on PostgreSQL stored with the challenge, then removed).
      const sentEvents = async () => {
        await server.ctx.audit.drain();
        return server.storage.db.kysely
          .selectFrom('audit_events')
          .select('id')
          .where('type', '=', 'otp.sent')
          .execute();
      };
      assert.equal((await sentEvents()).length, 0);
      // Not counted as a resend: asking again at once works, and that code signs in.
      const retried = await start(server, 'ada@example.com');
      assert.equal(retried.status, 200, retried.text);
      assert.equal((await sentEvents()).length, 1);
      const done = await complete(server, retried.body.challenge_id, delivery.sent[0]!.code);
      assert.equal(done.status, 200, done.text);
    } finally {
      await server.close();
    }
  });

  test('an SMS delivery failure names SMS', async () => {
    const delivery: Delivery = {
      notify: async () => {},
      send: async () => {
        throw new DeliveryError('gateway down');
      },
      close: async () => {},
    };
    const server = await boot(dialect, { delivery });
    try {
      const failed = await start(server, '+14155552671');
      assertProblem(failed, 503, 'delivery_failed');
      assert.match(failed.body.detail, /SMS could not be sent/);
      // No outbox route unless the outbox is the delivery.
      assert.equal((await server.request('GET', '/dev/outbox')).status, 404);
    } finally {
      await server.close();
    }
  });
});

eachDialect('OTP complete', (dialect) => {
  test('a code of the wrong format is refused without taking an attempt', async () => {
    const server = await boot(dialect);
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      for (const bad of ['12345', '1234567', 'abcdef', ' 123456', '12 345', '１２３４５６', '-12345']) {
        const answer = await complete(server, id, bad);
        assertProblem(answer, 400, 'invalid_code');
        assert.match(answer.body.detail, /6 digits/);
      }
      const first = await complete(server, id, wrong(code));
      assertProblem(first, 400, 'invalid_code');
      assert.match(first.body.detail, /4 attempts left/);
    } finally {
      await server.close();
    }
  });

  test('wrong codes count down; after 5 even the right code is refused with too_many_attempts', async () => {
    const server = await boot(dialect, { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      const details = [];
      for (let i = 1; i <= 5; i++) {
        const answer = await complete(server, id, wrong(code, i));
        assertProblem(answer, 400, 'invalid_code');
        assert.ok(!answer.text.includes(code), 'the answer holds the code');
        details.push(answer.body.detail);
      }
      assert.deepEqual(details, [
        'the code is not correct; 4 attempts left',
        'the code is not correct; 3 attempts left',
        'the code is not correct; 2 attempts left',
        'the code is not correct; 1 attempt left',
        'the code is not correct; ask for a new one',
      ]);
      const right = await complete(server, id, code);
      assertProblem(right, 429, 'too_many_attempts');
      assert.ok(!right.text.includes(code));
      // A fresh code for the same identifier works (the identifier budget of 10 is not spent).
      const next = await challenge(server, 'ada@example.com');
      assert.equal((await complete(server, next.id, next.code)).status, 200);
    } finally {
      await server.close();
    }
  });

  test('20 wrong guesses in parallel: exactly 5 are checked, the rest get 429, the code is dead', async () => {
    const server = await boot(dialect);
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => complete(server, id, wrong(code, i + 1))),
      );
      const invalid = answers.filter((a) => a.status === 400);
      const limited = answers.filter((a) => a.status === 429);
      assert.equal(invalid.length, 5, answers.map((a) => a.status).join(','));
      assert.equal(limited.length, 15, answers.map((a) => a.status).join(','));
      for (const a of invalid) assert.equal(a.body.code, 'invalid_code');
      for (const a of limited) assert.equal(a.body.code, 'too_many_attempts');
      assertProblem(await complete(server, id, code), 429, 'too_many_attempts');
    } finally {
      await server.close();
    }
  });

  test("a new code does not reset the identifier's guess budget", async () => {
    const clock = manualClock();
    const server = await boot(dialect, {
      now: clock.now,
      env: { TESSERA_RATE_LIMIT_OTP_GUESSES: '8/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
    });
    try {
      const first = await challenge(server, 'ada@example.com');
      for (let i = 1; i <= 4; i++)
        assertProblem(await complete(server, first.id, wrong(first.code, i)), 400, 'invalid_code');
      const second = await challenge(server, 'ada@example.com');
      for (let i = 1; i <= 4; i++) {
        assertProblem(await complete(server, second.id, wrong(second.code, i)), 400, 'invalid_code');
      }
      // Eight wrong guesses spent over two challenges; a third challenge has 5 attempts of its
      // own, but the identifier has none left: not even the right code gets through.
      const third = await challenge(server, 'ada@example.com');
      const guess = await complete(server, third.id, wrong(third.code));
      assertProblem(guess, 429, 'too_many_attempts');
      assert.equal(guess.headers.get('retry-after'), '900');
      assertProblem(await complete(server, third.id, third.code), 429, 'too_many_attempts');
      // Another identifier of the same project keeps its own budget.
      const other = await challenge(server, 'bob@example.com');
      assert.equal((await complete(server, other.id, other.code)).status, 200);
      // When the window has passed, the third challenge's code works (it is still valid).
      clock.advance(900);
      const fourth = await challenge(server, 'ada@example.com');
      assert.equal((await complete(server, fourth.id, fourth.code)).status, 200);
    } finally {
      await server.close();
    }
  });

  test('a right guess gives its unit of the budget back', async () => {
    const server = await boot(dialect, {
      env: { TESSERA_RATE_LIMIT_OTP_GUESSES: '2/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
    });
    try {
      for (let i = 0; i < 4; i++) {
        const { id, code } = await challenge(server, 'ada@example.com');
        const done = await complete(server, id, code, false);
        assert.equal(done.status, 200, `sign-in ${i + 1}: ${done.text}`);
      }
    } finally {
      await server.close();
    }
  });

  test('an expired challenge is refused with challenge_expired (injected clock)', async () => {
    const clock = manualClock();
    const server = await boot(dialect, { now: clock.now });
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      clock.advance(299);
      assertProblem(await complete(server, id, wrong(code)), 400, 'invalid_code');
      clock.advance(1);
      const expired = await complete(server, id, code);
      assertProblem(expired, 400, 'challenge_expired');
      assert.ok(!expired.text.includes(code));
    } finally {
      await server.close();
    }
  });

  test('a used code is refused with challenge_used', async () => {
    const server = await boot(dialect);
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      assert.equal((await complete(server, id, code)).status, 200);
      assertProblem(await complete(server, id, code), 400, 'challenge_used');
      assertProblem(await complete(server, id, wrong(code)), 400, 'challenge_used');
    } finally {
      await server.close();
    }
  });

  test("another project's API key cannot complete the challenge", async () => {
    const server = await boot(dialect);
    try {
      const b = await server.ctx.projects.create({ name: 'b' });
      const { id, code } = await challenge(server, 'ada@example.com');
      assertProblem(
        await complete(server, id, code, true, keyOf(server, b.api_key_id)),
        400,
        'challenge_not_found',
      );
      assertProblem(await complete(server, 'otp_does_not_exist', code), 400, 'challenge_not_found');
      // Project A's challenge is untouched.
      const done = await complete(server, id, code);
      assert.equal(done.status, 200, done.text);
      assert.equal(decodeJwt(done.body.oauth_token.access_token).aud, server.project.api_key_id);
    } finally {
      await server.close();
    }
  });

  test('parallel completes with the right code: exactly one succeeds', async () => {
    const server = await boot(dialect);
    try {
      const { id, code } = await challenge(server, 'ada@example.com');
      // Five: as many as the challenge has attempts, so each one may get past the attempt count.
      const answers = await Promise.all(Array.from({ length: 5 }, () => complete(server, id, code)));
      const ok = answers.filter((a) => a.status === 200);
      const losers = answers.filter((a) => a.status !== 200);
      assert.equal(ok.length, 1, answers.map((a) => a.text).join('\n'));
      assert.equal(losers.length, 4);
      for (const loser of losers) assertProblem(loser, 400, 'challenge_used');
    } finally {
      await server.close();
    }
  });

  test('two first sign-ins racing on two challenges create one user', async () => {
    const server = await boot(dialect, { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    try {
      const a = await challenge(server, 'ada@example.com');
      const b = await challenge(server, 'ada@example.com');
      const answers = await Promise.all([
        complete(server, a.id, a.code, false),
        complete(server, b.id, b.code, false),
      ]);
      for (const answer of answers) assert.equal(answer.status, 200, answer.text);
      assert.equal(answers[0]!.body.user_id, answers[1]!.body.user_id);
    } finally {
      await server.close();
    }
  });

  test('getOAuthToken false (or absent) answers only {user_id, auth_method}', async () => {
    const server = await boot(dialect, { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    try {
      const first = await challenge(server, 'ada@example.com');
      const without = await complete(server, first.id, first.code, false);
      assert.equal(without.status, 200, without.text);
      assert.deepEqual(Object.keys(without.body).sort(), ['auth_method', 'user_id']);
      assert.equal(without.body.auth_method, 'OTP');
      assert.match(without.body.user_id, /^[0-9a-f-]{36}$/);

      const second = await challenge(server, 'ada@example.com');
      const absent = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: second.id, code: second.code },
        headers: keyOf(server),
      });
      assert.equal(absent.status, 200, absent.text);
      assert.deepEqual(absent.body, { user_id: without.body.user_id, auth_method: 'OTP' });

      const third = await challenge(server, 'ada@example.com');
      const withToken = await complete(server, third.id, third.code, true);
      assert.equal(withToken.status, 200);
      assert.deepEqual(Object.keys(withToken.body), ['oauth_token']);
      assert.equal(decodeJwt(withToken.body.oauth_token.access_token).sub, without.body.user_id);
    } finally {
      await server.close();
    }
  });

  test('the first success creates the user; signing in again gives the same sub', async () => {
    const server = await boot(dialect, { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    try {
      assert.equal(await server.ctx.db.kysely.selectFrom('users').select('id').executeTakeFirst(), undefined);
      // A started but not completed sign-in creates no one.
      await start(server, 'ada@example.com');
      assert.equal(await server.ctx.db.kysely.selectFrom('users').select('id').executeTakeFirst(), undefined);
      const first = decodeJwt((await server.signIn('ada@example.com')).access_token);
      const second = decodeJwt((await server.signIn('Ada@Example.com')).access_token);
      assert.equal(typeof first.sub, 'string');
      assert.equal(second.sub, first.sub);
      assert.notEqual(second.sid, first.sid);
      const users = await server.ctx.db.kysely.selectFrom('users').select(['id', 'identifier']).execute();
      assert.deepEqual(users, [{ id: first.sub, identifier: 'ada@example.com' }]);
      // The same identifier in another project is another user.
      const b = await server.ctx.projects.create({ name: 'b' });
      const inB = decodeJwt((await server.signIn('ada@example.com', b)).access_token);
      assert.notEqual(inB.sub, first.sub);
      assert.equal(inB.aud, b.api_key_id);
    } finally {
      await server.close();
    }
  });
});

eachDialect('OTP project credentials and origins', (dialect) => {
  test('a missing API_KEY_ID is 401 missing_api_key; an unknown one 401 unknown_api_key', async () => {
    const server = await boot(dialect);
    try {
      assertProblem(await start(server, 'ada@example.com', {}), 401, 'missing_api_key');
      assertProblem(await start(server, 'ada@example.com', { api_key_id: '' }), 401, 'missing_api_key');
      assertProblem(
        await start(server, 'ada@example.com', { api_key_id: 'pk_nope' }),
        401,
        'unknown_api_key',
      );
      // Sent, but longer than any API key id: unknown, not missing.
      assertProblem(
        await start(server, 'ada@example.com', { api_key_id: `pk_${'x'.repeat(200)}` }),
        401,
        'unknown_api_key',
      );
      assertProblem(await complete(server, 'otp_x', '123456', true, {}), 401, 'missing_api_key');
      assertProblem(
        await complete(server, 'otp_x', '123456', true, { api_key_id: 'pk_nope' }),
        401,
        'unknown_api_key',
      );
      assert.deepEqual(server.outbox.list(), []);
      // The header name is case-insensitive, and Api-Key-Id is accepted too.
      assert.equal(
        (await start(server, 'ada@example.com', { API_KEY_ID: server.project.api_key_id })).status,
        200,
      );
      assert.equal(
        (await start(server, 'bob@example.com', { 'Api-Key-Id': server.project.api_key_id })).status,
        200,
      );
    } finally {
      await server.close();
    }
  });

  test("a browser Origin outside the project's origins is 403 origin_not_allowed", async () => {
    const server = await boot(dialect);
    try {
      // http://b.test is allowed for project b, not for the test project.
      await server.ctx.projects.create({ name: 'b', origins: ['http://b.test'] });
      for (const origin of [
        'http://evil.test',
        'http://b.test',
        'https://app.test',
        'http://app.test:8080',
      ]) {
        const answer = await start(server, 'ada@example.com', { ...keyOf(server), origin });
        assertProblem(answer, 403, 'origin_not_allowed');
        // The detail never quotes the request (docs/API.md, "Errors").
        assert.ok(!answer.text.includes(origin.replace(/^https?:\/\//, '')), answer.text);
      }
      const completeAnswer = await complete(server, 'otp_x', '123456', true, {
        ...keyOf(server),
        origin: 'http://evil.test',
      });
      assertProblem(completeAnswer, 403, 'origin_not_allowed');
      assert.deepEqual(server.outbox.list(), []);
    } finally {
      await server.close();
    }
  });

  test('an allowed origin signs in, with CORS headers and a preflight that answers for it', async () => {
    const server = await boot(dialect);
    try {
      const preflight = await server.request('OPTIONS', '/v1/auth/otp/start', {
        headers: {
          origin: 'http://app.test',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'api_key_id, content-type',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://app.test');
      assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
      const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      assert.match(allowed, /\bapi_key_id\b/);
      assert.match(allowed, /\bcontent-type\b/);
      assert.match(preflight.headers.get('vary') ?? '', /Origin/);

      const headers = { ...keyOf(server), origin: 'http://app.test' };
      const started = await start(server, 'ada@example.com', headers);
      assert.equal(started.status, 200, started.text);
      assert.equal(started.headers.get('access-control-allow-origin'), 'http://app.test');
      const done = await complete(
        server,
        started.body.challenge_id,
        server.lastCode('ada@example.com'),
        true,
        headers,
      );
      assert.equal(done.status, 200, done.text);
      assert.equal(done.headers.get('access-control-allow-origin'), 'http://app.test');
    } finally {
      await server.close();
    }
  });
});

eachDialect('attempts left in problem documents', (dialect) => {
  test('a wrong OTP code says how many attempts remain, as a number', async () => {
    const server = await startServer(dialect);
    try {
      const headers = { api_key_id: server.project.api_key_id };
      const started = await server.request('POST', '/v1/auth/otp/start', {
        body: { identifier: 'left@example.com' },
        headers,
      });
      const code = server.lastCode('left@example.com');
      const wrong = code === '000000' ? '111111' : '000000';
      const first = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: started.body.challenge_id, code: wrong },
        headers,
      });
      assert.equal(first.body.code, 'invalid_code');
      assert.equal(first.body.attempts_left, 4);
      const second = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: started.body.challenge_id, code: wrong },
        headers,
      });
      assert.equal(second.body.attempts_left, 3);
    } finally {
      await server.close();
    }
  });
});
