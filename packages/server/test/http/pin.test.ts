import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  basicAuth,
  createStorage,
  type Dialect,
  eachDialect,
  type StartOptions,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import {
  bearer,
  type DevicePurpose,
  otpUser,
  registerDevice,
  signedText,
  type TestDevice,
  webCryptoDevice,
} from '../helpers/sign-in-methods.js';
import { SoftwareAuthenticator } from '../helpers/webauthn.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60', TESSERA_RATE_LIMIT_OTP_START: '100000/60' };
const PIN = '73915062';
const OTHER_PIN = '480517';

const nextEmail = () => uniqueEmail('pin');

function assertProblem(response: TestResponse, status: number, code: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(response.body.code, code, response.text);
  assert.equal(response.body.status, status);
}

/** A signed-in user of `server` with a trusted device (and a PIN when one is given). */
interface PinUser {
  email: string;
  userId: string;
  bundle: OAuthTokenBundle;
  device: TestDevice;
  deviceId: string;
  project: ProjectCredentials;
}

async function userWithDevice(server: TestServer, pin?: string): Promise<PinUser> {
  const user = await otpUser(server, nextEmail());
  const { deviceId, device } = await registerDevice(server, user);
  if (pin !== undefined) {
    const set = await server.request('PUT', '/v1/pin', { body: { pin }, headers: bearer(user.bundle) });
    assert.equal(set.status, 200, set.text);
  }
  return { ...user, device, deviceId };
}

/** A whole PIN sign-in (start, device signature, complete) against `server`. */
async function pinSignIn(
  server: TestServer,
  user: PinUser,
  pin: string,
  options: { signer?: TestDevice; purpose?: DevicePurpose; getOAuthToken?: boolean } = {},
): Promise<TestResponse> {
  const headers = { api_key_id: user.project.api_key_id };
  const started = await server.request('POST', '/v1/auth/pin/start', {
    body: { device_id: user.deviceId },
    headers,
  });
  assert.equal(started.status, 200, started.text);
  const { challenge_id, nonce } = started.body;
  const text = signedText(options.purpose ?? 'pin-signin', user.project.api_key_id, challenge_id, nonce);
  return server.request('POST', '/v1/auth/pin/complete', {
    body: {
      challenge_id,
      signature: await (options.signer ?? user.device).sign(text),
      pin,
      getOAuthToken: options.getOAuthToken ?? true,
    },
    headers,
  });
}

/** A whole TRUSTED DEVICE sign-in of `user`; returns the bundle (auth_method "TRUSTED DEVICE"). */
async function deviceSignIn(server: TestServer, user: PinUser): Promise<OAuthTokenBundle> {
  const headers = { api_key_id: user.project.api_key_id };
  const started = await server.request('POST', '/v1/auth/device/start', {
    body: { device_id: user.deviceId },
    headers,
  });
  assert.equal(started.status, 200, started.text);
  const { challenge_id, nonce } = started.body;
  const answer = await server.request('POST', '/v1/auth/device/complete', {
    body: {
      challenge_id,
      signature: await user.device.sign(
        signedText('device-signin', user.project.api_key_id, challenge_id, nonce),
      ),
      getOAuthToken: true,
    },
    headers,
  });
  assert.equal(answer.status, 200, answer.text);
  const bundle = answer.body.oauth_token as OAuthTokenBundle;
  assert.equal(bundle.auth_method, 'TRUSTED DEVICE');
  return bundle;
}

/** Registers a passkey for the signed-in user (by `bundle`); returns its authenticator. */
async function registerPasskey(server: TestServer, bundle: OAuthTokenBundle): Promise<SoftwareAuthenticator> {
  const authenticator = new SoftwareAuthenticator();
  const started = await server.request('POST', '/v1/biometrics/register/start', { headers: bearer(bundle) });
  assert.equal(started.status, 200, started.text);
  const credential = authenticator.register({
    challenge: started.body.options.challenge,
    userHandle: started.body.options.user.id,
  });
  const registered = await server.request('POST', '/v1/biometrics/register/complete', {
    body: { challenge_id: started.body.challenge_id, credential },
    headers: bearer(bundle),
  });
  assert.equal(registered.status, 201, registered.text);
  return authenticator;
}

/** A whole BIOMETRIC sign-in with `authenticator`; returns the bundle (auth_method "BIOMETRIC"). */
async function passkeySignIn(
  server: TestServer,
  authenticator: SoftwareAuthenticator,
): Promise<OAuthTokenBundle> {
  const headers = { api_key_id: server.project.api_key_id };
  const started = await server.request('POST', '/v1/auth/biometric/start', { body: {}, headers });
  assert.equal(started.status, 200, started.text);
  const answer = await server.request('POST', '/v1/auth/biometric/complete', {
    body: {
      challenge_id: started.body.challenge_id,
      credential: authenticator.authenticate({ challenge: started.body.options.challenge }),
      getOAuthToken: true,
    },
    headers,
  });
  assert.equal(answer.status, 200, answer.text);
  const bundle = answer.body.oauth_token as OAuthTokenBundle;
  assert.equal(bundle.auth_method, 'BIOMETRIC');
  return bundle;
}

async function pinRow(server: TestServer, userId: string) {
  return server.storage.db.kysely
    .selectFrom('pins')
    .selectAll()
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** A PIN sure to differ from PIN. */
const wrongPin = (i = 0) => String(20_000_000 + i * 7919).padStart(8, '0');

eachDialect('PIN', (dialect) => {
  let server: TestServer;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
  });
  after(() => server.close());

  const status = async (bundle: OAuthTokenBundle) => {
    const answer = await server.request('GET', '/v1/pin', { headers: bearer(bundle) });
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  };
  const setPin = (bundle: OAuthTokenBundle, pin: string, currentPin?: string) =>
    server.request('PUT', '/v1/pin', {
      body: { pin, ...(currentPin === undefined ? {} : { current_pin: currentPin }) },
      headers: bearer(bundle),
    });

  describe('set, change, remove', () => {
    test('GET /v1/pin before and after PUT', async () => {
      const user = await userWithDevice(server);
      assert.deepEqual(await status(user.bundle), { pin_set: false, locked: false, attempts_left: 5 });
      const set = await setPin(user.bundle, PIN);
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(set.body, { pin_set: true });
      assert.deepEqual(await status(user.bundle), { pin_set: true, locked: false, attempts_left: 5 });
    });

    test('weak PINs are refused with 400 weak_pin and nothing is stored', async () => {
      const user = await userWithDevice(server);
      for (const pin of [
        '1111',
        '1234',
        '9876',
        '0000',
        '4321',
        '123',
        '1234567890123',
        '12ab',
        'abcd',
        '12 34',
        '+1234',
      ]) {
        assertProblem(await setPin(user.bundle, pin), 400, 'weak_pin');
      }
      assert.equal(await pinRow(server, user.userId), undefined);
      assert.equal((await setPin(user.bundle, '1357924680')).status, 200);
    });

    test('the stored hash is scrypt, salted, and holds no PIN', async () => {
      const a = await userWithDevice(server, PIN);
      const b = await userWithDevice(server, PIN);
      const rowA = (await pinRow(server, a.userId))!;
      const rowB = (await pinRow(server, b.userId))!;
      assert.match(rowA.hash, /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
      assert.notEqual(rowA.hash, rowB.hash, 'a salt per user');
      const plainDigests = ['hex', 'base64url', 'base64'].map((encoding) =>
        createHash('sha256')
          .update(PIN)
          .digest(encoding as 'hex'),
      );
      for (const row of [rowA, rowB]) {
        assert.ok(!row.hash.includes(PIN), 'no PIN in the hash');
        for (const digest of plainDigests)
          assert.ok(!row.hash.includes(digest), 'not a bare digest of the PIN');
        assert.equal(row.failed_attempts, 0);
        assert.equal(row.locked_at, null);
      }
    });

    test('a change needs a sign-in within 10 minutes or the current PIN', async () => {
      const user = await userWithDevice(server, PIN);
      // Just signed in: no current PIN needed.
      assert.equal((await setPin(user.bundle, OTHER_PIN)).status, 200);
      clock.t += 11 * 60_000;
      assertProblem(await setPin(user.bundle, PIN), 403, 'reauthentication_required');
      assertProblem(await setPin(user.bundle, PIN, PIN), 403, 'invalid_pin');
      assertProblem(await setPin(user.bundle, PIN, '12ab'), 403, 'invalid_pin');
      const changed = await setPin(user.bundle, PIN, OTHER_PIN);
      assert.equal(changed.status, 200, changed.text);
      // The new PIN signs in; the old one does not.
      assertProblem(await pinSignIn(server, user, OTHER_PIN), 401, 'invalid_pin');
      assert.equal((await pinSignIn(server, user, PIN)).status, 200);
      // A fresh sign-in is recent again.
      const fresh = await server.signIn(user.email);
      assert.equal((await setPin(fresh, OTHER_PIN)).status, 200);
    });

    test('regression: a wrong current_pin spends a PIN attempt, so PUT/DELETE /v1/pin is no unlimited PIN oracle', async () => {
      const user = await userWithDevice(server, PIN);
      clock.t += 11 * 60_000;
      assertProblem(await pinSignIn(server, user, wrongPin(0)), 401, 'invalid_pin');
      for (let i = 1; i <= 3; i++) {
        const answer = await setPin(user.bundle, OTHER_PIN, wrongPin(i));
        assertProblem(answer, 403, 'invalid_pin');
        assert.match(answer.body.detail, new RegExp(`\\b${4 - i} attempts? left`));
      }
      assertProblem(
        await server.request('DELETE', '/v1/pin', {
          body: { current_pin: wrongPin(4) },
          headers: bearer(user.bundle),
        }),
        423,
        'pin_locked',
      );
      assert.equal((await pinRow(server, user.userId))!.failed_attempts, 5);
      // Locked: neither the right current PIN nor PIN sign-in works until an OTP sign-in.
      assertProblem(await setPin(user.bundle, OTHER_PIN, PIN), 423, 'pin_locked');
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
      const fresh = await server.signIn(user.email);
      assert.equal((await setPin(fresh, OTHER_PIN)).status, 200);
      assert.equal((await pinSignIn(server, user, OTHER_PIN)).status, 200);
    });

    test('a right current_pin clears earlier wrong attempts', async () => {
      const user = await userWithDevice(server, PIN);
      clock.t += 11 * 60_000;
      for (let i = 0; i < 2; i++)
        assertProblem(await pinSignIn(server, user, wrongPin(i)), 401, 'invalid_pin');
      const removed = await server.request('DELETE', '/v1/pin', {
        body: { current_pin: PIN },
        headers: bearer(user.bundle),
      });
      assert.equal(removed.status, 204, removed.text);
    });

    test('a weak new PIN is refused before the current PIN is even looked at', async () => {
      const user = await userWithDevice(server, PIN);
      assertProblem(await setPin(user.bundle, '1111', PIN), 400, 'weak_pin');
      assert.equal((await pinSignIn(server, user, PIN)).status, 200, 'the PIN did not change');
    });

    test('DELETE /v1/pin: recent sign-in or current PIN; then PIN sign-in answers pin_not_set', async () => {
      const user = await userWithDevice(server, PIN);
      clock.t += 11 * 60_000;
      assertProblem(
        await server.request('DELETE', '/v1/pin', { headers: bearer(user.bundle) }),
        403,
        'reauthentication_required',
      );
      assertProblem(
        await server.request('DELETE', '/v1/pin', {
          body: { current_pin: OTHER_PIN },
          headers: bearer(user.bundle),
        }),
        403,
        'invalid_pin',
      );
      const removed = await server.request('DELETE', '/v1/pin', {
        body: { current_pin: PIN },
        headers: bearer(user.bundle),
      });
      assert.equal(removed.status, 204, removed.text);
      assert.deepEqual(await status(user.bundle), { pin_set: false, locked: false, attempts_left: 5 });
      assertProblem(await pinSignIn(server, user, PIN), 400, 'pin_not_set');
      assertProblem(
        await server.request('DELETE', '/v1/pin', { headers: bearer(user.bundle) }),
        400,
        'pin_not_set',
      );

      const recent = await userWithDevice(server, PIN);
      assert.equal(
        (await server.request('DELETE', '/v1/pin', { headers: bearer(recent.bundle) })).status,
        204,
      );
    });

    test('PIN not set → 400 pin_not_set at sign-in, audited as a failed PIN sign-in', async () => {
      const user = await userWithDevice(server);
      assertProblem(await pinSignIn(server, user, PIN), 400, 'pin_not_set');
      const audit = await server.request(
        'GET',
        `/v1/audit?type=signin.failed&user_id=${encodeURIComponent(user.userId)}`,
        { headers: { authorization: basicAuth(user.project) } },
      );
      assert.equal(audit.status, 200, audit.text);
      assert.deepEqual(
        audit.body.events.map((e: { type: string; user_id: string; data: unknown }) => [
          e.type,
          e.user_id,
          e.data,
        ]),
        [['signin.failed', user.userId, { method: 'PIN', reason: 'pin_not_set' }]],
      );
    });

    test('the PIN routes need a Bearer token', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const answer = await server.request(
          method,
          '/v1/pin',
          method === 'PUT' ? { body: { pin: PIN } } : {},
        );
        assertProblem(answer, 401, 'unauthorized');
        assert.match(answer.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    });
  });

  describe('who may replace or remove a PIN (security regression)', () => {
    const removePin = (bundle: OAuthTokenBundle, currentPin?: string) =>
      server.request('DELETE', '/v1/pin', {
        body: currentPin === undefined ? {} : { current_pin: currentPin },
        headers: bearer(bundle),
      });
    const lockPin = async (user: PinUser) => {
      for (let i = 0; i < 4; i++)
        assertProblem(await pinSignIn(server, user, wrongPin(i)), 401, 'invalid_pin');
      assertProblem(await pinSignIn(server, user, wrongPin(4)), 423, 'pin_locked');
    };

    test('regression: 5 wrong PINs, then a TRUSTED DEVICE sign-in cannot unlock and replace the PIN (PUT /v1/pin without current_pin → 423)', async () => {
      const user = await userWithDevice(server, PIN);
      // A device session started before the lock (a device sign-in after it is refused: abuse test).
      const device = await deviceSignIn(server, user);
      await lockPin(user);
      const lockedRow = (await pinRow(server, user.userId))!;
      // The reported attack: no current_pin, on a session just started by the device alone.
      assertProblem(await setPin(device, OTHER_PIN), 423, 'pin_locked');
      // Nor with the right PIN, nor by removing the PIN and setting a new one.
      assertProblem(await setPin(device, OTHER_PIN, PIN), 423, 'pin_locked');
      assertProblem(await removePin(device), 423, 'pin_locked');
      assertProblem(await removePin(device, PIN), 423, 'pin_locked');
      // PIN sign-in stays locked, with the new PIN as with the old.
      assertProblem(await pinSignIn(server, user, OTHER_PIN), 423, 'pin_locked');
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
      const row = (await pinRow(server, user.userId))!;
      assert.equal(row.hash, lockedRow.hash, 'the PIN was not replaced');
      assert.equal(row.failed_attempts, 5);
      assert.notEqual(row.locked_at, null);
      assert.deepEqual(await status(device), { pin_set: true, locked: true, attempts_left: 0 });
    });

    test('a TRUSTED DEVICE or PIN session must give current_pin, even right after signing in', async () => {
      const user = await userWithDevice(server, PIN);
      const device = await deviceSignIn(server, user);
      assertProblem(await setPin(device, OTHER_PIN), 403, 'reauthentication_required');
      assertProblem(await removePin(device), 403, 'reauthentication_required');
      assert.equal((await setPin(device, OTHER_PIN, PIN)).status, 200);

      const signedIn = await pinSignIn(server, user, OTHER_PIN);
      assert.equal(signedIn.status, 200, signedIn.text);
      const pinSession = signedIn.body.oauth_token as OAuthTokenBundle;
      assert.equal(pinSession.auth_method, 'PIN');
      assertProblem(await setPin(pinSession, PIN), 403, 'reauthentication_required');
      assertProblem(await removePin(pinSession), 403, 'reauthentication_required');
      assert.equal((await removePin(pinSession, OTHER_PIN)).status, 204);
    });

    test('a recent BIOMETRIC sign-in stands in for current_pin, but does not clear a lock', async () => {
      const user = await userWithDevice(server, PIN);
      const passkey = await registerPasskey(server, user.bundle);
      const biometric = await passkeySignIn(server, passkey);
      assert.equal((await setPin(biometric, OTHER_PIN)).status, 200);
      assert.equal((await pinSignIn(server, user, OTHER_PIN)).status, 200);
      clock.t += 11 * 60_000;
      assertProblem(await setPin(biometric, PIN), 403, 'reauthentication_required');

      await lockPin(user);
      const fresh = await passkeySignIn(server, passkey);
      assertProblem(await setPin(fresh, PIN), 423, 'pin_locked');
      assertProblem(await removePin(fresh), 423, 'pin_locked');
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
      assertProblem(await pinSignIn(server, user, OTHER_PIN), 423, 'pin_locked');
    });

    test('legitimate: after the lock, an OTP sign-in then PUT /v1/pin sets a new PIN that signs in', async () => {
      const user = await userWithDevice(server, PIN);
      await lockPin(user);
      clock.t += 31_000; // past the OTP resend interval
      const otp = await server.signIn(user.email);
      const changed = await setPin(otp, OTHER_PIN);
      assert.equal(changed.status, 200, changed.text);
      assertProblem(await pinSignIn(server, user, PIN), 401, 'invalid_pin');
      const answer = await pinSignIn(server, user, OTHER_PIN);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.oauth_token.auth_method, 'PIN');
    });

    test('legitimate: a PIN locked after a recent OTP sign-in may be set or removed on that session, not on an older one', async () => {
      const user = await userWithDevice(server, PIN);
      clock.t += 31_000;
      const otp = await server.signIn(user.email);
      await lockPin(user);
      assert.equal((await setPin(otp, OTHER_PIN)).status, 200);
      assert.deepEqual(await status(otp), { pin_set: true, locked: false, attempts_left: 5 });
      assert.equal((await pinSignIn(server, user, OTHER_PIN)).status, 200);

      await lockPin(user);
      assert.equal((await removePin(otp)).status, 204);
      assert.deepEqual(await status(otp), { pin_set: false, locked: false, attempts_left: 5 });

      const other = await userWithDevice(server, PIN);
      await lockPin(other);
      clock.t += 11 * 60_000;
      assertProblem(await setPin(other.bundle, OTHER_PIN), 423, 'pin_locked');
      assertProblem(await removePin(other.bundle), 423, 'pin_locked');
    });

    test('legitimate: current_pin on an old session still changes and removes the PIN', async () => {
      const user = await userWithDevice(server, PIN);
      clock.t += 11 * 60_000;
      assert.equal((await setPin(user.bundle, OTHER_PIN, PIN)).status, 200);
      assert.equal((await pinSignIn(server, user, OTHER_PIN)).status, 200);
      assert.equal((await removePin(user.bundle, OTHER_PIN)).status, 204);
    });
  });

  describe('sign-in and lockout', () => {
    test('a PIN sign-in gives auth_method "PIN" and claim PIN, on a session bound to the device', async () => {
      const user = await userWithDevice(server, PIN);
      const answer = await pinSignIn(server, user, PIN);
      assert.equal(answer.status, 200, answer.text);
      const bundle = answer.body.oauth_token as OAuthTokenBundle;
      assert.equal(bundle.auth_method, 'PIN');
      const claims = decodeJwt(bundle.access_token);
      assert.equal(claims.authentication_method, 'PIN');
      assert.equal(claims.sub, user.userId);
      assert.equal(claims.identifier, user.email);
      const session = await server.storage.db.kysely
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', claims.sid as string)
        .executeTakeFirstOrThrow();
      assert.equal(session.device_id, user.deviceId);
      assert.equal(session.auth_method, 'PIN');
      const verified = await server.request('POST', '/verify', { body: { oauth_token: bundle } });
      assert.deepEqual(verified.body, { success: true });

      const idsOnly = await pinSignIn(server, user, PIN, { getOAuthToken: false });
      assert.deepEqual(idsOnly.body, { user_id: user.userId, auth_method: 'PIN' });
    });

    test('wrong PINs: 401 invalid_pin with the attempts left; the 5th locks (423); then even the right PIN is 423', async () => {
      const user = await userWithDevice(server, PIN);
      for (let i = 1; i <= 4; i++) {
        const answer = await pinSignIn(server, user, wrongPin(i));
        assertProblem(answer, 401, 'invalid_pin');
        assert.match(answer.body.detail, new RegExp(`\\b${5 - i} attempts? left`));
        assert.equal(answer.body.attempts_left, 5 - i, 'apps read the count, not the text');
        assert.equal((await status(user.bundle)).attempts_left, 5 - i);
      }
      const fifth = await pinSignIn(server, user, wrongPin(5));
      assertProblem(fifth, 423, 'pin_locked');
      const right = await pinSignIn(server, user, PIN);
      assertProblem(right, 423, 'pin_locked');
      assert.notEqual(right.body.code, 'invalid_pin', 'locked and wrong are told apart by code');
      assert.deepEqual(await status(user.bundle), { pin_set: true, locked: true, attempts_left: 0 });
      const row = (await pinRow(server, user.userId))!;
      assert.equal(row.failed_attempts, 5);
      assert.notEqual(row.locked_at, null);
    });

    test('a right PIN resets the count of wrong ones', async () => {
      const user = await userWithDevice(server, PIN);
      for (let i = 0; i < 4; i++)
        assertProblem(await pinSignIn(server, user, wrongPin(i)), 401, 'invalid_pin');
      assert.equal((await pinSignIn(server, user, PIN)).status, 200);
      assert.equal((await pinRow(server, user.userId))!.failed_attempts, 0);
      for (let i = 0; i < 4; i++)
        assertProblem(await pinSignIn(server, user, wrongPin(i)), 401, 'invalid_pin');
      assert.equal((await pinSignIn(server, user, PIN)).status, 200);
    });

    test('a malformed PIN costs an attempt like a wrong one', async () => {
      const user = await userWithDevice(server, PIN);
      assertProblem(await pinSignIn(server, user, 'abcd'), 401, 'invalid_pin');
      assert.equal((await pinRow(server, user.userId))!.failed_attempts, 1);
    });

    test('10 wrong PINs in parallel: never more than 5 counted, and the lock holds', async () => {
      const user = await userWithDevice(server, PIN);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => pinSignIn(server, user, wrongPin(i))),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(
        statuses,
        [401, 401, 401, 401, 423, 423, 423, 423, 423, 423],
        answers.map((a) => a.text).join('\n'),
      );
      for (const a of answers) assert.equal(a.body.code, a.status === 401 ? 'invalid_pin' : 'pin_locked');
      const row = (await pinRow(server, user.userId))!;
      assert.equal(row.failed_attempts, 5);
      assert.notEqual(row.locked_at, null);
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
    });

    test('an OTP sign-in of the user unlocks PIN sign-in', async () => {
      const user = await userWithDevice(server, PIN);
      for (let i = 0; i < 5; i++) await pinSignIn(server, user, wrongPin(i));
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
      clock.t += 31_000; // past the OTP resend interval
      const otp = await server.signIn(user.email);
      assert.deepEqual(await status(otp), { pin_set: true, locked: false, attempts_left: 5 });
      const answer = await pinSignIn(server, user, PIN);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.oauth_token.auth_method, 'PIN');
      const unlocked = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select('data')
        .where('user_id', '=', user.userId)
        .where('type', '=', 'pin.unlocked')
        .execute();
      assert.deepEqual(
        unlocked.map((e) => JSON.parse(e.data)),
        [{ by: 'OTP' }],
      );
    });

    test('an OTP sign-in of another user does not unlock', async () => {
      const user = await userWithDevice(server, PIN);
      for (let i = 0; i < 5; i++) await pinSignIn(server, user, wrongPin(i));
      await server.signIn(nextEmail());
      assertProblem(await pinSignIn(server, user, PIN), 423, 'pin_locked');
    });

    test('a forged device signature spends no PIN attempt (and says invalid_signature, even when locked)', async () => {
      const user = await userWithDevice(server, PIN);
      const impostor = await webCryptoDevice();
      for (const pin of [wrongPin(), PIN]) {
        assertProblem(await pinSignIn(server, user, pin, { signer: impostor }), 401, 'invalid_signature');
      }
      assertProblem(
        await pinSignIn(server, user, PIN, { purpose: 'device-signin' }),
        401,
        'invalid_signature',
      );
      assert.equal((await pinRow(server, user.userId))!.failed_attempts, 0);
      assert.equal((await status(user.bundle)).attempts_left, 5);
      for (let i = 0; i < 5; i++) await pinSignIn(server, user, wrongPin(i));
      assertProblem(await pinSignIn(server, user, PIN, { signer: impostor }), 401, 'invalid_signature');
    });

    test('a PIN challenge is not a device challenge, and the reverse', async () => {
      const user = await userWithDevice(server, PIN);
      const headers = { api_key_id: server.project.api_key_id };
      const pinChallenge = (
        await server.request('POST', '/v1/auth/pin/start', { body: { device_id: user.deviceId }, headers })
      ).body;
      const asDevice = await server.request('POST', '/v1/auth/device/complete', {
        body: {
          challenge_id: pinChallenge.challenge_id,
          signature: await user.device.sign(
            signedText(
              'device-signin',
              server.project.api_key_id,
              pinChallenge.challenge_id,
              pinChallenge.nonce,
            ),
          ),
          getOAuthToken: true,
        },
        headers,
      });
      assertProblem(asDevice, 400, 'challenge_not_found');
      const deviceChallenge = (
        await server.request('POST', '/v1/auth/device/start', { body: { device_id: user.deviceId }, headers })
      ).body;
      const asPin = await server.request('POST', '/v1/auth/pin/complete', {
        body: {
          challenge_id: deviceChallenge.challenge_id,
          signature: await user.device.sign(
            signedText(
              'pin-signin',
              server.project.api_key_id,
              deviceChallenge.challenge_id,
              deviceChallenge.nonce,
            ),
          ),
          pin: PIN,
          getOAuthToken: true,
        },
        headers,
      });
      assertProblem(asPin, 400, 'challenge_not_found');
    });

    test('PIN sign-in events are audited: failures, the lock, success', async () => {
      const user = await userWithDevice(server, PIN);
      assert.equal((await pinSignIn(server, user, PIN)).status, 200);
      for (let i = 0; i < 5; i++) await pinSignIn(server, user, wrongPin(i));
      await pinSignIn(server, user, PIN);
      const events = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select(['type', 'data'])
        .where('user_id', '=', user.userId)
        .where('type', 'in', ['signin.succeeded', 'signin.failed', 'pin.locked', 'pin.set'])
        .execute();
      const count = (type: string, data: Record<string, unknown>) =>
        events.filter((e) => e.type === type && JSON.stringify(JSON.parse(e.data)) === JSON.stringify(data))
          .length;
      assert.equal(count('pin.set', {}), 1);
      assert.equal(count('signin.succeeded', { method: 'PIN', device_id: user.deviceId }), 1);
      assert.equal(count('signin.failed', { method: 'PIN', reason: 'invalid_pin' }), 5);
      assert.equal(count('pin.locked', {}), 1);
      assert.equal(count('signin.failed', { method: 'PIN', reason: 'pin_locked' }), 1);
      for (const e of events) assert.ok(!e.data.includes(PIN), 'no PIN in the audit log');
    });
  });
});

eachDialect('PIN lockout across servers', (dialect: Dialect) => {
  // No OTP resend interval: the test signs the same user in twice within moments.
  const env = { ...ENV, TESSERA_OTP_RESEND_INTERVAL: '0' };
  const options = (storage: StartOptions['storage'], masterKey: string): StartOptions => ({
    env,
    storage,
    masterKey,
  });

  test('the lock survives a restart on the same storage', async () => {
    const storage = await createStorage(dialect);
    const masterKey = randomBytes(32).toString('base64');
    try {
      const first = await startServer(dialect, options(storage, masterKey));
      let user: PinUser;
      try {
        user = await userWithDevice(first, PIN);
        for (let i = 0; i < 4; i++)
          assertProblem(await pinSignIn(first, user, wrongPin(i)), 401, 'invalid_pin');
        assertProblem(await pinSignIn(first, user, wrongPin(4)), 423, 'pin_locked');
      } finally {
        await first.close();
      }
      const second = await startServer(dialect, options(storage, masterKey));
      try {
        assertProblem(await pinSignIn(second, user, PIN), 423, 'pin_locked');
        // The OTP unlock works on the restarted server, and the PIN (peppered by the same
        // master key) still verifies.
        await second.signIn(user.email, user.project);
        assert.equal((await pinSignIn(second, user, PIN)).status, 200);
      } finally {
        await second.close();
      }
    } finally {
      await storage.cleanup();
    }
  });

  test('a second server process on the same storage sees and enforces the same count', async () => {
    const a = await startServer(dialect, { env });
    const b = await startServer(dialect, { env, storage: a.storage, masterKey: a.masterKey });
    try {
      const user = await userWithDevice(a, PIN);
      assertProblem(await pinSignIn(a, user, wrongPin(0)), 401, 'invalid_pin');
      const onB = await pinSignIn(b, user, wrongPin(1));
      assertProblem(onB, 401, 'invalid_pin');
      assert.match(onB.body.detail, /\b3 attempts left/);
      // The remaining guesses, in parallel on both servers: only three more are counted.
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => pinSignIn(i % 2 ? a : b, user, wrongPin(i + 2))),
      );
      assert.deepEqual(
        answers.map((x) => x.status).sort(),
        [401, 401, 423, 423, 423, 423, 423, 423],
        answers.map((x) => x.text).join('\n'),
      );
      assert.equal((await pinRow(a, user.userId))!.failed_attempts, 5);
      assertProblem(await pinSignIn(a, user, PIN), 423, 'pin_locked');
      assertProblem(await pinSignIn(b, user, PIN), 423, 'pin_locked');
    } finally {
      await b.close();
      await a.close();
    }
  });
});
