import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { eachDialect, startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import {
  assertProblem,
  bearer,
  deviceSignIn,
  otpUser,
  refreshGrant,
  registerDevice,
  setPin,
} from '../helpers/sign-in-methods.js';

// Regression tests of issue 12 (abuse by strangers), each reproduced against a real server over
// HTTP. The client address comes from X-Forwarded-For behind one trusted proxy hop.
const ENV = { TESSERA_TRUST_PROXY: '1', TESSERA_RATE_LIMIT_IP: '100000/60' };

const ATTACKER = '203.0.113.5';
const USER = '198.51.100.7';

eachDialect('abuse resistance', (dialect) => {
  let server: TestServer;
  const clock = { t: Date.now() };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: () => clock.t });
  });
  after(() => server.close());

  const from = (ip: string, extra: Record<string, string> = {}) => ({
    api_key_id: server.project.api_key_id,
    'x-forwarded-for': ip,
    ...extra,
  });
  const start = (identifier: string, ip: string) =>
    server.request('POST', '/v1/auth/otp/start', { body: { identifier }, headers: from(ip) });
  const complete = (challengeId: string, code: string, ip: string) =>
    server.request('POST', '/v1/auth/otp/complete', {
      body: { challenge_id: challengeId, code, getOAuthToken: true },
      headers: from(ip),
    });
  const wrong = (code: string) => (code === '000000' ? '000001' : '000000');

  // Regression (outside review): behind a proxy that writes `ip:port`, each source port was a
  // network with limits of its own, and so was each non-canonical spelling of an address.
  describe('per-client limits behind a trusted proxy', () => {
    test('a port, a spelling or an IPv6 /64 of one subscriber does not make a new network', async () => {
      const limited = await startServer(dialect, {
        env: { ...ENV, TESSERA_RATE_LIMIT_IP: '3/60' },
        now: () => clock.t,
      });
      try {
        const probe = (ip: string) =>
          limited.request('POST', '/v1/auth/otp/complete', {
            body: { challenge_id: 'otp_unknown', code: '123456' },
            headers: { api_key_id: limited.project.api_key_id, 'x-forwarded-for': ip },
          });
        const statuses = async (ips: string[]) => {
          const out: number[] = [];
          for (const ip of ips) out.push((await probe(ip)).status);
          return out;
        };
        assert.deepEqual(
          await statuses(['203.0.113.5:1111', '203.0.113.5:2222', '203.0.113.5', '203.0.113.5:3333']),
          [400, 400, 400, 429],
        );
        assert.deepEqual(
          await statuses(['203.0.113.005', '0xcb.0.113.5', 'unknown', '203.0.113.05']),
          [400, 400, 400, 429],
        );
        assert.deepEqual(
          await statuses([
            '[2001:db8:1:2::1]:443',
            '2001:db8:1:2::2',
            '[2001:db8:1:2::3]',
            '2001:db8:1:2::4',
          ]),
          [400, 400, 400, 429],
        );
        // Five /64s of one /56: three requests each, but twelve (4 × 3) in all for the /56. What a
        // /64 sends once refused does not count against its /56 (its neighbours' share).
        const site: string[] = [];
        for (let j = 0; j < 6; j++) site.push(`2001:db8:5:0::${j + 1}`);
        for (let i = 1; i < 5; i++) for (let j = 0; j < 3; j++) site.push(`2001:db8:5:${i}::${j + 1}`);
        const answers = await statuses(site);
        assert.deepEqual(answers.slice(0, 6), [400, 400, 400, 429, 429, 429]);
        assert.deepEqual(answers.slice(6, 15), Array(9).fill(400));
        assert.deepEqual(answers.slice(15), Array(3).fill(429));
        // Another subscriber, another /56, is not held back.
        assert.equal((await probe('2001:db8:2:1::1')).status, 400);
        // Bodies that fail to parse or validate count too: the limit is counted before the body
        // is read (they were refused as 400s without ever being counted).
        const bad = (raw: string) =>
          limited.request('POST', '/v1/auth/otp/start', {
            raw,
            headers: {
              api_key_id: limited.project.api_key_id,
              'x-forwarded-for': '198.51.100.99',
              'content-type': 'application/json',
            },
          });
        assert.equal((await bad('{"identifier":')).status, 400);
        assert.equal((await bad('{"identifier":["x"]}')).status, 400);
        assert.equal((await bad('{"locale":[[[[[]]]]]}')).status, 400);
        assert.equal((await bad('{"identifier":"ada@example.com"}')).status, 429);
      } finally {
        await limited.close();
      }
    });
  });

  // Regression (outside review): the refresh client fingerprint took the proxy's `ip:port`, so a
  // retry of one client on another connection looked like another client reusing the token.
  test('a refresh retried on another connection of the same client gets the grace answer', async () => {
    const bundle = await server.signIn(uniqueEmail('ports'));
    const grant = (ip: string) =>
      refreshGrant(server, bundle.refresh_token, { 'x-forwarded-for': ip, 'user-agent': 'tab/1' });
    const first = await grant('203.0.113.77:40001');
    assert.equal(first.status, 200, first.text);
    const retried = await grant('203.0.113.77:40002');
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.refresh_token, first.body.refresh_token);
  });

  // Regression (outside review): each junk request naming an unknown device or challenge stored a
  // signin.failed event (kept a year, sent to every webhook): one address wrote ~180 a minute.
  test('junk sign-ins naming nothing store at most 60 events a project minute; the metrics count all', async () => {
    clock.t = (Math.floor(clock.t / 60_000) + 1) * 60_000 + 1000;
    const stored = async () =>
      (
        await server.storage.db.kysely
          .selectFrom('audit_events')
          .select('id')
          .where('project_id', '=', server.project.project_id)
          .where('type', '=', 'signin.failed')
          .execute()
      ).length;
    const junk = (i: number) =>
      server.request('POST', i % 2 ? '/v1/auth/device/start' : '/v1/auth/pin/complete', {
        body:
          i % 2
            ? { device_id: `dev_junk${i}` }
            : { challenge_id: `ch_junk${i}`, signature: 'AA', pin: '1234' },
        headers: from(ATTACKER),
      });
    const failuresCounted = async () => {
      const { values } = await server.ctx.metrics.signIns.get();
      return values.filter((v) => v.labels.outcome === 'failure').reduce((sum, v) => sum + v.value, 0);
    };
    const before = await stored();
    const countedBefore = await failuresCounted();
    for (let i = 0; i < 70; i++) assert.equal((await junk(i)).status, 400);
    await server.ctx.audit.drain();
    assert.equal((await stored()) - before, 60);
    assert.equal((await failuresCounted()) - countedBefore, 70);
    // A new minute stores them again.
    clock.t += 60_000;
    assert.equal((await junk(1)).status, 400);
    await server.ctx.audit.drain();
    assert.equal((await stored()) - before, 61);
  });

  // Regression (outside review): identifier-first passkey starts were limited per identifier
  // alone, so five requests every 15 minutes from anywhere kept the real user out.
  test('a stranger spends only their own network’s passkey starts for an identifier; a ceiling bounds all', async () => {
    const victim = uniqueEmail('passkey-start');
    const passkeyStart = (ip: string) =>
      server.request('POST', '/v1/auth/biometric/start', { body: { identifier: victim }, headers: from(ip) });
    for (let i = 0; i < 5; i++) assert.equal((await passkeyStart(ATTACKER)).status, 200);
    const refused = await passkeyStart(ATTACKER);
    assert.equal(refused.status, 429, refused.text);
    assert.equal((await passkeyStart(USER)).status, 200);
    // 30 an hour from all networks together (TESSERA_RATE_LIMIT_OTP_START_CEILING): 6 so far.
    let allowed = 6;
    for (let n = 1; allowed < 30; n++)
      for (let i = 0; i < 5 && allowed < 30; i++, allowed++)
        assert.equal((await passkeyStart(`192.0.2.${n}`)).status, 200);
    const ceiling = await passkeyStart('192.0.2.200');
    assert.equal(ceiling.status, 429, ceiling.text);
  });

  describe('OTP: a stranger who knows only the identifier', () => {
    test('regression: two code requests and ten wrong guesses no longer lock the real user out', async () => {
      const victim = uniqueEmail('victim');
      let guesses = 0;
      let throttled = false;
      for (let round = 0; round < 3 && !throttled; round++) {
        const started = await start(victim, ATTACKER);
        assert.equal(started.status, 200, started.text);
        for (let i = 0; i < 5; i++) {
          const answer = await complete(started.body.challenge_id, wrong(server.lastCode(victim)), ATTACKER);
          if (answer.status === 429 && answer.body.code === 'too_many_attempts') {
            throttled = true;
            break;
          }
          assert.equal(answer.status, 400, answer.text);
          guesses++;
        }
        clock.t += 31_000;
      }
      // The attacker is throttled on their own network…
      assert.equal(guesses, 10);
      assert.ok(throttled, 'the attacker was not throttled');
      // …and the real user, on theirs, asks for a code and signs in.
      const started = await start(victim, USER);
      assert.equal(started.status, 200, started.text);
      const signedIn = await complete(started.body.challenge_id, server.lastCode(victim), USER);
      assert.equal(signedIn.status, 200, signedIn.text);
      assert.ok(signedIn.body.oauth_token.access_token);
    });

    test('a stranger asking for codes does not stop the real user from getting one', async () => {
      const victim = uniqueEmail('resend');
      assert.equal((await start(victim, ATTACKER)).status, 200);
      const again = await start(victim, ATTACKER);
      assert.equal(again.status, 429);
      assert.equal(again.body.code, 'resend_too_soon');
      const own = await start(victim, USER);
      assert.equal(own.status, 200, own.text);
    });

    test('IPv6 clients are counted by /64: addresses of one subscriber share the budget', async () => {
      const victim = uniqueEmail('v6');
      let throttled = 0;
      for (let i = 1; i <= 12 && throttled === 0; i++) {
        const started = await start(victim, `2001:db8:7:7::${i.toString(16)}`);
        if (started.status === 429) {
          throttled = i;
          break;
        }
        const answer = await complete(
          started.body.challenge_id,
          wrong(server.lastCode(victim)),
          `2001:db8:7:7:ffff::${i.toString(16)}`,
        );
        if (answer.status === 429) throttled = i;
        clock.t += 31_000;
      }
      assert.ok(throttled > 0 && throttled <= 11, `not throttled within the /64 (went to ${throttled})`);
    });

    test('a long-term ceiling per identifier still bounds guessing from many networks', async () => {
      const limited = await startServer(dialect, {
        env: { ...ENV, TESSERA_RATE_LIMIT_OTP_GUESSES_CEILING: '6/86400' },
        now: () => clock.t,
      });
      try {
        const victim = uniqueEmail('ceiling');
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) {
          const ip = `192.0.2.${10 + i}`;
          const started = await limited.request('POST', '/v1/auth/otp/start', {
            body: { identifier: victim },
            headers: { api_key_id: limited.project.api_key_id, 'x-forwarded-for': ip },
          });
          assert.equal(started.status, 200, started.text);
          const answer = await limited.request('POST', '/v1/auth/otp/complete', {
            body: { challenge_id: started.body.challenge_id, code: wrong(limited.lastCode(victim)) },
            headers: { api_key_id: limited.project.api_key_id, 'x-forwarded-for': ip },
          });
          statuses.push(answer.status);
        }
        assert.deepEqual(statuses, [400, 400, 400, 400, 400, 400, 429, 429]);
      } finally {
        await limited.close();
      }
    });
  });

  describe('OTP: a patient stranger on one network', () => {
    test('regression: one network alone cannot spend the identifier-wide ceiling (it locked the user for a day)', async () => {
      const limited = await startServer(dialect, {
        env: { ...ENV, TESSERA_RATE_LIMIT_OTP_GUESSES_CEILING: '25/86400' },
        now: () => clock.t,
      });
      try {
        const victim = uniqueEmail('patient');
        const ask = (ip: string) =>
          limited.request('POST', '/v1/auth/otp/start', {
            body: { identifier: victim },
            headers: { api_key_id: limited.project.api_key_id, 'x-forwarded-for': ip },
          });
        const guess = (challengeId: string, code: string, ip: string) =>
          limited.request('POST', '/v1/auth/otp/complete', {
            body: { challenge_id: challengeId, code, getOAuthToken: true },
            headers: { api_key_id: limited.project.api_key_id, 'x-forwarded-for': ip },
          });
        let wrongAnswered = 0;
        // Three 15-minute windows of guessing from one network: 30 tries at the short budget.
        for (let window = 0; window < 3; window++) {
          for (let round = 0; round < 2; round++) {
            const started = await ask(ATTACKER);
            if (started.status !== 200) break;
            for (let i = 0; i < 5; i++) {
              const answer = await guess(
                started.body.challenge_id,
                wrong(limited.lastCode(victim)),
                ATTACKER,
              );
              if (answer.status === 400) wrongAnswered++;
            }
            clock.t += 31_000;
          }
          clock.t += 16 * 60_000;
        }
        // The network's daily budget (20) stopped it below the ceiling (25)…
        assert.equal(wrongAnswered, 20);
        // …so the real user, elsewhere, still signs in.
        const started = await ask(USER);
        assert.equal(started.status, 200, started.text);
        const signedIn = await guess(started.body.challenge_id, limited.lastCode(victim), USER);
        assert.equal(signedIn.status, 200, signedIn.text);
      } finally {
        await limited.close();
      }
    });
  });

  describe('proxy trust', () => {
    test('regression: a spoofed left-most X-Forwarded-For entry no longer escapes the per-IP limit', async () => {
      const limited = await startServer(dialect, {
        env: { ...ENV, TESSERA_RATE_LIMIT_IP: '3/60' },
        now: () => clock.t,
      });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 5; i++) {
          const answer = await limited.request('POST', '/v1/auth/otp/start', {
            body: { identifier: 'someone@example.com' },
            // The client forges its own first entry; the trusted proxy appends the real address.
            headers: { 'x-forwarded-for': `10.9.8.${i}, ${USER}` },
          });
          statuses.push(answer.status);
        }
        assert.ok(
          statuses.slice(0, 3).every((s) => s !== 429),
          String(statuses),
        );
        assert.deepEqual(statuses.slice(3), [429, 429]);
      } finally {
        await limited.close();
      }
    });
  });

  describe('refresh grace window', () => {
    const refresh = (token: string, userAgent: string) =>
      refreshGrant(server, token, { 'user-agent': userAgent, 'x-forwarded-for': USER });

    const events = async (type: string, sessionId: string) =>
      (
        await server.storage.db.kysely
          .selectFrom('audit_events')
          .select('data')
          .where('type', '=', type)
          .execute()
      ).filter((e) => JSON.parse(e.data).session_id === sessionId).length;

    const sidOf = (bundle: OAuthTokenBundle) =>
      JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sid as string;

    test('the same client inside the window gets the same successor, and the grace answer is audited', async () => {
      const bundle = await server.signIn(uniqueEmail('grace'));
      const first = await refresh(bundle.refresh_token, 'tab-browser/1');
      assert.equal(first.status, 200, first.text);
      const second = await refresh(bundle.refresh_token, 'tab-browser/1');
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.refresh_token, first.body.refresh_token);
      // The grace answer does not wait for its audit write (issue 34): the event lands just after.
      let graced = 0;
      for (let tries = 0; tries < 50 && graced === 0; tries++) {
        graced = await events('refresh.grace', sidOf(bundle));
        if (graced === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(graced, 1);
    });

    test('regression: another client replaying a rotated token inside the window is refused and the session revoked', async () => {
      const bundle = await server.signIn(uniqueEmail('thief'));
      const first = await refresh(bundle.refresh_token, 'owner-browser/1');
      assert.equal(first.status, 200, first.text);
      const stolen = await refresh(bundle.refresh_token, 'thief-client/9');
      assert.equal(stolen.status, 400, stolen.text);
      assert.equal(stolen.body.error, 'invalid_grant');
      // Treated as reuse: the owner's successor is dead too.
      const owner = await refresh(first.body.refresh_token, 'owner-browser/1');
      assert.equal(owner.status, 400, owner.text);
      assert.equal(await events('refresh.reuse_detected', sidOf(bundle)), 1);
    });
  });
  describe('a stolen access token must not become lasting access', () => {
    test('regression: enrolling a device, a passkey or a first PIN needs a recent OTP or passkey sign-in', async () => {
      const user = await otpUser(server, uniqueEmail('stolen'));
      // Eleven minutes later (the resend interval long past) the access token still works, but is no longer a recent sign-in.
      clock.t += 11 * 60_000;
      const headers = bearer(user.bundle);
      const attempts = [
        await server.request('POST', '/v1/devices/register/start', { headers }),
        await server.request('POST', '/v1/biometrics/register/start', { headers }),
        await server.request('PUT', '/v1/pin', { body: { pin: '480213' }, headers }),
      ];
      for (const answer of attempts) assertProblem(answer, 403, 'reauthentication_required');
      // The user signs in again by OTP and may enrol; each enrolment is told to the user.
      const fresh = await otpUser(server, user.email);
      const before = server.outbox.notices().length;
      await registerDevice(server, fresh);
      await setPin(server, fresh, '480213');
      const notices = server.outbox.notices().slice(0, server.outbox.notices().length - before);
      assert.deepEqual(notices.map((n) => [n.to, n.event]).reverse(), [
        [user.email, 'device.added'],
        [user.email, 'pin.set'],
      ]);
    });

    test('regression: a locked PIN locks device sign-in too, until an OTP sign-in', async () => {
      const user = await otpUser(server, uniqueEmail('locked'));
      const device = await registerDevice(server, user);
      await setPin(server, user, '480213');
      for (let i = 0; i < 5; i++) await deviceSignIn(server, device, { pin: '111333' });
      assertProblem(await deviceSignIn(server, device), 423, 'pin_locked');
      clock.t += 31_000;
      await otpUser(server, user.email);
      const unlocked = await deviceSignIn(server, device);
      assert.equal(unlocked.status, 200, unlocked.text);
    });

    test('a project may require the PIN on every device sign-in', async () => {
      const strict = await server.ctx.projects.create({
        name: 'strict',
        origins: ['http://strict.test'],
        deviceRequiresPin: true,
      });
      const user = await otpUser(server, uniqueEmail('strict'), strict);
      const device = await registerDevice(server, user);
      await setPin(server, user, '480213');
      assertProblem(await deviceSignIn(server, device, { project: strict }), 403, 'pin_required');
      const withPin = await deviceSignIn(server, device, { project: strict, pin: '480213' });
      assert.equal(withPin.status, 200, withPin.text);
    });

    test('sign out everywhere and forget devices: the end user (recent sign-in needed to forget) and the integrator', async () => {
      const user = await otpUser(server, uniqueEmail('everywhere'));
      const device = await registerDevice(server, user);
      clock.t += 31_000;
      const other = await otpUser(server, user.email);
      clock.t += 11 * 60_000;
      // Revoking sessions alone leaves the device able to sign in again: that is why forgetting exists.
      const stale = bearer(user.bundle);
      const forget = await server.request('POST', '/v1/me/sessions/revoke', {
        body: { forget_devices: true },
        headers: stale,
      });
      assertProblem(forget, 403, 'reauthentication_required');
      const fresh = await otpUser(server, user.email);
      const done = await server.request('POST', '/v1/me/sessions/revoke', {
        body: { scope: 'others', forget_devices: true },
        headers: bearer(fresh.bundle),
      });
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.devices_forgotten, 1);
      assert.ok(done.body.sessions_revoked >= 2);
      const verify = (token: string) =>
        server.request('POST', '/verify', { body: { oauth_token: { access_token: token } } });
      assert.equal((await verify(other.bundle.access_token)).body.success, false);
      assert.equal(
        (await verify(fresh.bundle.access_token)).body.success,
        true,
        'the caller stays signed in',
      );
      const started = await server.request('POST', '/v1/auth/device/start', {
        body: { device_id: device.deviceId },
        headers: { api_key_id: server.project.api_key_id },
      });
      assertProblem(started, 400, 'device_not_found');
      assert.equal(server.outbox.notices()[0]?.event, 'signed_out_everywhere');

      // The integrator does the same for a user who reports a lost phone.
      clock.t += 31_000;
      const again = await otpUser(server, user.email);
      await registerDevice(server, again);
      const integrator = await server.request('POST', `/v1/users/${user.userId}/sessions/revoke`, {
        body: { forget_devices: true },
        headers: {
          authorization: `Basic ${Buffer.from(`${server.project.api_key_id}:${server.project.api_key_secret}`).toString('base64')}`,
        },
      });
      assert.equal(integrator.status, 200, integrator.text);
      assert.equal(integrator.body.devices_forgotten, 1);
      assert.equal((await verify(again.bundle.access_token)).body.success, false);
    });
  });
});
