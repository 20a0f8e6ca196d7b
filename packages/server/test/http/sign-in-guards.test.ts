/**
 * The common rules of TRUSTED DEVICE, PIN and BIOMETRIC sign-in: the OTP rate limits apply per
 * user (not only per IP or per device), and every failure is in the audit log — including those
 * refused before any signature or assertion is checked (unknown, used or expired challenges,
 * unknown or removed devices).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  type StartOptions,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import {
  assertProblem,
  assertRateLimited,
  bearer,
  completeDeviceSignIn,
  completePasskeySignIn,
  deviceSignIn,
  otpUser,
  passkeySignIn,
  registerDevice,
  registerPasskey,
  setPin,
  signedText,
  startDeviceSignIn,
  startPasskeySignIn,
} from '../helpers/sign-in-methods.js';

const PIN = '73915062';
const nextEmail = () => uniqueEmail('guards');

interface Audited {
  event_id: string;
  type: string;
  user_id: string | null;
  data: Record<string, unknown>;
}

/** The project's `signin.failed` events through the integrator API, oldest first. */
async function failures(
  server: TestServer,
  project: ProjectCredentials = server.project,
): Promise<Audited[]> {
  await server.ctx.audit.drain();
  const response = await server.request('GET', '/v1/audit?type=signin.failed&limit=500', {
    headers: { authorization: basicAuth(project) },
  });
  assert.equal(response.status, 200, response.text);
  return (response.body.events as Audited[]).reverse();
}

/** Reads the audit log before and after `action`: the `signin.failed` events it added. */
async function failuresDuring(
  server: TestServer,
  action: () => Promise<void>,
  project: ProjectCredentials = server.project,
): Promise<Array<Pick<Audited, 'user_id' | 'data'>>> {
  // Passkey refusals record their event without waiting for it (their timing must not depend on
  // it): the events of earlier requests are waited for before, this action's after.
  await server.ctx.audit.drain();
  const seen = new Set((await failures(server, project)).map((e) => e.event_id));
  await action();
  await server.ctx.audit.drain();
  return (await failures(server, project))
    .filter((e) => !seen.has(e.event_id))
    .map(({ user_id, data }) => ({ user_id, data }));
}

/**
 * The same events, in any order: events of one request share the injected clock's millisecond,
 * and the log orders those by their random ids.
 */
function assertSameEvents(actual: Array<Pick<Audited, 'user_id' | 'data'>>, expected: typeof actual): void {
  const canonical = (events: typeof actual) => events.map((e) => JSON.stringify(e)).sort();
  assert.deepEqual(canonical(actual), canonical(expected));
}

/** Nothing the caller sent or a secret: no challenge id, nonce, signature, credential id or e-mail. */
function assertNoSecrets(events: Array<{ data: Record<string, unknown> }>, ...values: string[]): void {
  const text = JSON.stringify(events.map((e) => e.data));
  for (const value of values) assert.ok(!text.includes(value), `the audit log holds ${value}`);
}

eachDialect('per-user rate limits of device, PIN and passkey sign-in', (dialect) => {
  const clock = { t: Date.now(), now: () => clock.t };
  const servers: TestServer[] = [];
  /** A server of its own per test, with one limit lowered. */
  const serverWith = async (env: Record<string, string>) => {
    const options: StartOptions = { env: { ...RELAXED_LIMITS, ...env }, now: clock.now };
    const server = await startServer(dialect, options);
    servers.push(server);
    return server;
  };
  after(async () => {
    for (const server of servers) await server.close();
  });

  for (const method of ['device', 'pin'] as const) {
    test(`${method} sign-in starts are limited per user, across the user's devices → 429 rate_limited with Retry-After`, async () => {
      const server = await serverWith({ TESSERA_RATE_LIMIT_OTP_START: '2/900' });
      const user = await otpUser(server, nextEmail());
      const first = await registerDevice(server, user);
      const second = await registerDevice(server, user);
      if (method === 'pin') await setPin(server, user, PIN);
      const neighbour = await otpUser(server, nextEmail());
      const neighboursDevice = await registerDevice(server, neighbour);

      assert.equal((await startDeviceSignIn(server, method, first.deviceId)).status, 200);
      assert.equal((await startDeviceSignIn(server, method, second.deviceId)).status, 200);
      // The third start is refused whichever of the user's devices asks.
      const events = await failuresDuring(server, async () => {
        assertRateLimited(await startDeviceSignIn(server, method, first.deviceId), 'rate_limited', 900);
        assertRateLimited(await startDeviceSignIn(server, method, second.deviceId), 'rate_limited', 900);
      });
      const label = method === 'pin' ? 'PIN' : 'TRUSTED DEVICE';
      assertSameEvents(events, [
        { user_id: user.userId, data: { method: label, reason: 'rate_limited', device_id: first.deviceId } },
        { user_id: user.userId, data: { method: label, reason: 'rate_limited', device_id: second.deviceId } },
      ]);
      // Another user of the project is not affected.
      assert.equal((await startDeviceSignIn(server, method, neighboursDevice.deviceId)).status, 200);
      // A new window: the user signs in again.
      clock.t += 901_000;
      const answer = await deviceSignIn(server, first, method === 'pin' ? { pin: PIN } : {});
      assert.equal(answer.status, 200, answer.text);
    });
  }

  test('passkey identifier-first starts are limited per identifier, known or not → 429 rate_limited', async () => {
    const server = await serverWith({ TESSERA_RATE_LIMIT_OTP_START: '2/900' });
    const user = await otpUser(server, nextEmail());
    const authenticator = await registerPasskey(server, user);
    const unknown = nextEmail();

    for (const identifier of [user.email, unknown]) {
      assert.equal((await startPasskeySignIn(server, identifier)).status, 200);
      assert.equal((await startPasskeySignIn(server, identifier)).status, 200);
      // Counted on the normalised identifier: another spelling is the same user.
      assertRateLimited(
        await startPasskeySignIn(server, ` ${identifier.toUpperCase()} `),
        'rate_limited',
        900,
      );
    }
    const events = await failures(server);
    assert.deepEqual(
      events.map(({ user_id, data }) => ({ user_id, data })),
      [{ user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'rate_limited' } }],
      'a limited start of a known user is audited (an unknown identifier names no user)',
    );
    assertNoSecrets(events, user.email, unknown);
    // Discoverable starts name no user: only the per-IP limit applies.
    const discoverable = await passkeySignIn(server, authenticator);
    assert.equal(discoverable.status, 200, discoverable.text);
  });

  test('failed passkey completes are counted per user, discoverable or not → 429 too_many_attempts', async () => {
    const server = await serverWith({ TESSERA_RATE_LIMIT_OTP_GUESSES: '3/900' });
    const user = await otpUser(server, nextEmail());
    const authenticator = await registerPasskey(server, user);
    const neighbour = await otpUser(server, nextEmail());
    const neighboursPasskey = await registerPasskey(server, neighbour);
    const noUv = { ceremony: { uv: false } };

    assertProblem(await passkeySignIn(server, authenticator, noUv), 400, 'user_verification_required');
    // A success gives its unit back: only failures count.
    assert.equal((await passkeySignIn(server, authenticator)).status, 200);
    assert.equal((await passkeySignIn(server, authenticator, { identifier: user.email })).status, 200);
    assertProblem(
      await passkeySignIn(server, authenticator, { ...noUv, identifier: user.email }),
      400,
      'user_verification_required',
    );
    assertProblem(await passkeySignIn(server, authenticator, noUv), 400, 'user_verification_required');
    // Three failures: even a valid assertion is refused now, discoverable or identifier-first.
    const events = await failuresDuring(server, async () => {
      assertRateLimited(await passkeySignIn(server, authenticator), 'too_many_attempts', 900);
      assertRateLimited(
        await passkeySignIn(server, authenticator, { identifier: user.email }),
        'too_many_attempts',
        900,
      );
    });
    assertSameEvents(events, [
      { user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'too_many_attempts' } },
      { user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'too_many_attempts' } },
    ]);
    // Another user is not affected; after the window the user signs in again.
    assert.equal((await passkeySignIn(server, neighboursPasskey)).status, 200);
    clock.t += 901_000;
    assert.equal((await passkeySignIn(server, authenticator)).status, 200);
  });
});

eachDialect('sign-in failures before the signature or assertion check are audited', (dialect) => {
  let server: TestServer;
  let other: ProjectCredentials;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS, now: clock.now });
    other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
  });
  after(() => server.close());

  for (const method of ['device', 'pin'] as const) {
    const label = method === 'pin' ? 'PIN' : 'TRUSTED DEVICE';
    const purpose = method === 'pin' ? 'pin-signin' : 'device-signin';

    describe(`${label}`, () => {
      /** A user with a device (and a PIN), and a started sign-in with its signature. */
      const started = async () => {
        const user = await otpUser(server, nextEmail());
        const device = await registerDevice(server, user);
        if (method === 'pin') await setPin(server, user, PIN);
        const start = await startDeviceSignIn(server, method, device.deviceId);
        assert.equal(start.status, 200, start.text);
        const { challenge_id, nonce } = start.body as { challenge_id: string; nonce: string };
        const signature = await device.device.sign(
          signedText(purpose, server.project.api_key_id, challenge_id, nonce),
        );
        const body = { challenge_id, signature, ...(method === 'pin' ? { pin: PIN } : {}) };
        return { user, device, body, nonce };
      };

      test('an unknown device at start: device_not_found, without the id sent', async () => {
        const events = await failuresDuring(server, async () => {
          assertProblem(
            await startDeviceSignIn(server, method, 'dev_NotAnyDeviceOfOurs'),
            400,
            'device_not_found',
          );
        });
        assert.deepEqual(events, [{ user_id: null, data: { method: label, reason: 'device_not_found' } }]);
        assertNoSecrets(events, 'dev_NotAnyDeviceOfOurs');
      });

      test('an unknown challenge, or one of another project: challenge_not_found in the caller’s log only', async () => {
        const { body } = await started();
        const unknown = await failuresDuring(server, async () => {
          assertProblem(
            await completeDeviceSignIn(server, method, { ...body, challenge_id: 'ch_unknown' }),
            400,
            'challenge_not_found',
          );
        });
        assert.deepEqual(unknown, [
          { user_id: null, data: { method: label, reason: 'challenge_not_found' } },
        ]);
        const before = await failures(server);
        const foreign = await failuresDuring(
          server,
          async () => {
            assertProblem(
              await completeDeviceSignIn(server, method, body, other),
              400,
              'challenge_not_found',
            );
          },
          other,
        );
        assert.deepEqual(foreign, [
          { user_id: null, data: { method: label, reason: 'challenge_not_found' } },
        ]);
        assert.equal((await failures(server)).length, before.length, 'nothing in the owner’s log');
        assertNoSecrets([...unknown, ...foreign], body.challenge_id, 'ch_unknown');
      });

      test('a replayed challenge: challenge_used, recorded against the user and device', async () => {
        const { user, device, body, nonce } = await started();
        const done = await completeDeviceSignIn(server, method, body);
        assert.equal(done.status, 200, done.text);
        const events = await failuresDuring(server, async () => {
          assertProblem(await completeDeviceSignIn(server, method, body), 400, 'challenge_used');
        });
        assert.deepEqual(events, [
          {
            user_id: user.userId,
            data: { method: label, reason: 'challenge_used', device_id: device.deviceId },
          },
        ]);
        assertNoSecrets(events, body.challenge_id, body.signature, nonce, user.email, PIN);
      });

      test('an expired challenge: challenge_expired, recorded against the user and device', async () => {
        const { user, device, body } = await started();
        clock.t += 121_000;
        const events = await failuresDuring(server, async () => {
          assertProblem(await completeDeviceSignIn(server, method, body), 400, 'challenge_expired');
        });
        assert.deepEqual(events, [
          {
            user_id: user.userId,
            data: { method: label, reason: 'challenge_expired', device_id: device.deviceId },
          },
        ]);
      });

      test('a device removed after start: device_not_found, recorded against the user', async () => {
        const { user, device, body } = await started();
        const removed = await server.request('DELETE', `/v1/devices/${device.deviceId}`, {
          headers: bearer(user.bundle),
        });
        assert.equal(removed.status, 204, removed.text);
        const events = await failuresDuring(server, async () => {
          assertProblem(await completeDeviceSignIn(server, method, body), 400, 'device_not_found');
        });
        assert.deepEqual(events, [
          {
            user_id: user.userId,
            data: { method: label, reason: 'device_not_found', device_id: device.deviceId },
          },
        ]);
        // The user's own audit trail shows it too.
        const mine = await server.request('GET', `/v1/audit?user_id=${user.userId}&type=signin.failed`, {
          headers: { authorization: basicAuth(server.project) },
        });
        assert.equal(mine.body.events[0].data.reason, 'device_not_found');
      });
    });
  }

  describe('BIOMETRIC', () => {
    const passkeyUser = async () => {
      const user = await otpUser(server, nextEmail());
      return { user, authenticator: await registerPasskey(server, user) };
    };

    test('an unknown challenge: challenge_not_found, against the owner of the passkey presented', async () => {
      const { user, authenticator } = await passkeyUser();
      const start = await startPasskeySignIn(server);
      const credential = authenticator.authenticate({ challenge: start.body.options.challenge });
      const events = await failuresDuring(server, async () => {
        assertProblem(
          await completePasskeySignIn(server, 'ch_unknown', credential),
          400,
          'challenge_not_found',
        );
        const stranger = { ...credential, id: 'bm90LWEtcGFzc2tleQ', rawId: 'bm90LWEtcGFzc2tleQ' };
        assertProblem(
          await completePasskeySignIn(server, 'ch_unknown', stranger),
          400,
          'challenge_not_found',
        );
      });
      assertSameEvents(events, [
        { user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'challenge_not_found' } },
        { user_id: null, data: { method: 'BIOMETRIC', reason: 'challenge_not_found' } },
      ]);
      assertNoSecrets(events, authenticator.id, 'bm90LWEtcGFzc2tleQ', start.body.challenge_id, user.email);
      // The real challenge is untouched by those attempts.
      const done = await completePasskeySignIn(server, start.body.challenge_id, credential);
      assert.equal(done.status, 200, done.text);
    });

    test('a replayed challenge: challenge_used, against the user (discoverable and identifier-first)', async () => {
      const { user, authenticator } = await passkeyUser();
      for (const identifier of [undefined, user.email]) {
        const start = await startPasskeySignIn(server, identifier);
        const credential = authenticator.authenticate({ challenge: start.body.options.challenge });
        assert.equal((await completePasskeySignIn(server, start.body.challenge_id, credential)).status, 200);
        const events = await failuresDuring(server, async () => {
          assertProblem(
            await completePasskeySignIn(server, start.body.challenge_id, credential),
            400,
            'challenge_used',
          );
        });
        assert.deepEqual(events, [
          { user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'challenge_used' } },
        ]);
        assertNoSecrets(events, authenticator.id, start.body.challenge_id, user.email);
      }
    });

    test('an expired challenge: challenge_expired, against the user', async () => {
      const { user, authenticator } = await passkeyUser();
      const start = await startPasskeySignIn(server, user.email);
      clock.t += 301_000;
      const credential = authenticator.authenticate({ challenge: start.body.options.challenge });
      const events = await failuresDuring(server, async () => {
        const answer: TestResponse = await completePasskeySignIn(server, start.body.challenge_id, credential);
        assertProblem(answer, 400, 'challenge_expired');
      });
      assert.deepEqual(events, [
        { user_id: user.userId, data: { method: 'BIOMETRIC', reason: 'challenge_expired' } },
      ]);
    });
  });
});
