import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as nodeSign } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type OAuthTokenBundle, VerifyReasons } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  eachDialect,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { lowS, refreshGrant } from '../helpers/sign-in-methods.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60', TESSERA_RATE_LIMIT_OTP_START: '100000/60' };
const { subtle } = globalThis.crypto;

const nextEmail = () => uniqueEmail('device');

type Purpose = 'device-register' | 'device-signin' | 'pin-signin';

/**
 * The bytes a device signs, written out here rather than imported, so that a change of the
 * format on the server fails these tests (apps in the field sign exactly this).
 */
const signedText = (purpose: Purpose, apiKeyId: string, challengeId: string, nonce: string) =>
  `tessera/v1/${purpose}\n${apiKeyId}\n${challengeId}\n${nonce}`;

interface TestDevice {
  /** The public JWK as WebCrypto exports it (with key_ops and ext: the server keeps x and y). */
  jwk: JsonWebKey;
  /** base64url signature over the text. */
  sign(text: string): Promise<string>;
}

/** A browser-style device: WebCrypto ECDSA, private key not extractable, raw r‖s signatures. */
async function webCryptoDevice(namedCurve = 'P-256'): Promise<TestDevice & { privateKey: CryptoKey }> {
  const pair = await subtle.generateKey({ name: 'ECDSA', namedCurve }, false, ['sign', 'verify']);
  assert.equal(pair.privateKey.extractable, false);
  const jwk = await subtle.exportKey('jwk', pair.publicKey);
  return {
    jwk,
    privateKey: pair.privateKey,
    async sign(text) {
      const hash = namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256';
      const signature = await subtle.sign(
        { name: 'ECDSA', hash },
        pair.privateKey,
        new TextEncoder().encode(text),
      );
      assert.equal(signature.byteLength, namedCurve === 'P-384' ? 96 : 64);
      return (namedCurve === 'P-256' ? lowS(signature) : Buffer.from(signature)).toString('base64url');
    },
  };
}

/** A key-store-style device (Android SHA256withECDSA, iOS SecKeyCreateSignature): DER signatures. */
function derDevice(): TestDevice {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    jwk: publicKey.export({ format: 'jwk' }) as JsonWebKey,
    async sign(text) {
      const der = nodeSign('sha256', Buffer.from(text, 'utf8'), privateKey);
      assert.equal(der[0], 0x30, 'a DER SEQUENCE');
      return der.toString('base64url');
    },
  };
}

function assertProblem(response: TestResponse, status: number, code: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(response.body.code, code, response.text);
  assert.equal(response.body.status, status);
}

const bearer = (bundle: OAuthTokenBundle) => ({ authorization: `Bearer ${bundle.access_token}` });
const keyOf = (project: ProjectCredentials) => ({ api_key_id: project.api_key_id });

eachDialect('TRUSTED DEVICE', (dialect) => {
  let server: TestServer;
  let other: ProjectCredentials;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
    other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
  });
  after(() => server.close());

  const db = () => server.storage.db.kysely;

  const startRegistration = async (bundle: OAuthTokenBundle) => {
    const started = await server.request('POST', '/v1/devices/register/start', { headers: bearer(bundle) });
    assert.equal(started.status, 200, started.text);
    return started.body as { challenge_id: string; nonce: string; expires_in: number };
  };

  /** Registers `device` for the signed-in user, signing what the device would sign. */
  const register = async (
    bundle: OAuthTokenBundle,
    device: TestDevice,
    options: {
      name?: string;
      publicKey?: unknown;
      signer?: TestDevice;
      purpose?: Purpose;
      project?: ProjectCredentials;
    } = {},
  ) => {
    const { challenge_id, nonce } = await startRegistration(bundle);
    const project = options.project ?? server.project;
    const text = signedText(options.purpose ?? 'device-register', project.api_key_id, challenge_id, nonce);
    const signature = await (options.signer ?? device).sign(text);
    return server.request('POST', '/v1/devices', {
      body: {
        challenge_id,
        public_key: options.publicKey ?? device.jwk,
        signature,
        ...(options.name ? { name: options.name } : {}),
      },
      headers: bearer(bundle),
    });
  };

  /** A new user (by OTP) and one registered WebCrypto device. */
  const userWithDevice = async (device?: TestDevice) => {
    const email = nextEmail();
    const bundle = await server.signIn(email);
    const key = device ?? (await webCryptoDevice());
    const answer = await register(bundle, key);
    assert.equal(answer.status, 201, answer.text);
    return {
      email,
      bundle,
      device: key,
      deviceId: answer.body.device_id as string,
      userId: decodeJwt(bundle.access_token).sub as string,
    };
  };

  const startSignIn = (deviceId: string, project = server.project) =>
    server.request('POST', '/v1/auth/device/start', {
      body: { device_id: deviceId },
      headers: keyOf(project),
    });

  const complete = (challengeId: string, signature: string, project = server.project, getOAuthToken = true) =>
    server.request('POST', '/v1/auth/device/complete', {
      body: { challenge_id: challengeId, signature, getOAuthToken },
      headers: keyOf(project),
    });

  /** The whole device sign-in; returns the answer of complete. */
  const signInWith = async (device: TestDevice, deviceId: string, getOAuthToken = true) => {
    const started = await startSignIn(deviceId);
    assert.equal(started.status, 200, started.text);
    const { challenge_id, nonce } = started.body;
    const signature = await device.sign(
      signedText('device-signin', server.project.api_key_id, challenge_id, nonce),
    );
    return complete(challenge_id, signature, server.project, getOAuthToken);
  };

  const refresh = (bundle: OAuthTokenBundle) => refreshGrant(server, bundle.refresh_token);
  const verify = async (bundle: OAuthTokenBundle) =>
    (
      await server.request('POST', '/verify', {
        body: { oauth_token: { access_token: bundle.access_token } },
      })
    ).body;

  describe('registration', () => {
    test('a WebCrypto key with a non-extractable private key registers; only x and y are kept', async () => {
      const bundle = await server.signIn(nextEmail());
      const { challenge_id, nonce, expires_in } = await startRegistration(bundle);
      assert.match(challenge_id, /^ch_/);
      assert.ok(nonce.length >= 43, 'a 256-bit nonce');
      assert.equal(expires_in, 120);
      const device = await webCryptoDevice();
      const answer = await server.request('POST', '/v1/devices', {
        body: {
          challenge_id,
          public_key: device.jwk,
          signature: await device.sign(
            signedText('device-register', server.project.api_key_id, challenge_id, nonce),
          ),
          name: '  Ada’s laptop ',
        },
        headers: bearer(bundle),
      });
      assert.equal(answer.status, 201, answer.text);
      assert.deepEqual(Object.keys(answer.body).sort(), ['created_at', 'device_id', 'last_used_at', 'name']);
      assert.match(answer.body.device_id, /^dev_/);
      assert.equal(answer.body.name, 'Ada’s laptop');
      assert.equal(answer.body.created_at, new Date(clock.t).toISOString());
      assert.equal(answer.body.last_used_at, null);
      const row = await db()
        .selectFrom('devices')
        .selectAll()
        .where('id', '=', answer.body.device_id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(row.public_jwk), {
        kty: 'EC',
        crv: 'P-256',
        x: device.jwk.x,
        y: device.jwk.y,
      });
      assert.equal(row.user_id, decodeJwt(bundle.access_token).sub);
    });

    test('without a name the device is called "Trusted device"', async () => {
      const bundle = await server.signIn(nextEmail());
      const answer = await register(bundle, await webCryptoDevice());
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.name, 'Trusted device');
    });

    test('refused: a P-384 key, a JWK holding d, a point not on the curve', async () => {
      const bundle = await server.signIn(nextEmail());
      const p384 = await webCryptoDevice('P-384');
      assertProblem(await register(bundle, p384), 400, 'invalid_public_key');

      const extractable = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
        'sign',
        'verify',
      ]);
      const privateJwk = await subtle.exportKey('jwk', extractable.privateKey);
      assert.equal(typeof privateJwk.d, 'string');
      const signer: TestDevice = {
        jwk: privateJwk,
        sign: async (text) =>
          Buffer.from(
            await subtle.sign(
              { name: 'ECDSA', hash: 'SHA-256' },
              extractable.privateKey,
              new TextEncoder().encode(text),
            ),
          ).toString('base64url'),
      };
      const withD = await register(bundle, signer);
      assertProblem(withD, 400, 'invalid_public_key');
      assert.doesNotMatch(withD.text, new RegExp(privateJwk.d!), 'the private key is not echoed');

      const device = await webCryptoDevice();
      const y = Buffer.from(device.jwk.y!, 'base64url');
      y[31] = y[31]! ^ 0x01;
      const offCurve = { ...device.jwk, y: y.toString('base64url') };
      assertProblem(await register(bundle, device, { publicKey: offCurve }), 400, 'invalid_public_key');

      for (const publicKey of [
        { kty: 'RSA', n: 'AQAB', e: 'AQAB' },
        { kty: 'EC', crv: 'P-256', x: device.jwk.x },
        { kty: 'OKP', crv: 'Ed25519', x: device.jwk.x },
      ]) {
        assertProblem(await register(bundle, device, { publicKey }), 400, 'invalid_public_key');
      }
      const listed = await server.request('GET', '/v1/devices', { headers: bearer(bundle) });
      assert.deepEqual(listed.body.devices, []);
    });

    test('a key already registered → 409 device_already_registered (same or another user); another project may hold it', async () => {
      const { bundle, device } = await userWithDevice();
      assertProblem(await register(bundle, device), 409, 'device_already_registered');
      const someoneElse = await server.signIn(nextEmail());
      assertProblem(await register(someoneElse, device), 409, 'device_already_registered');
      const elsewhere = await server.signIn(nextEmail(), other);
      const answer = await register(elsewhere, device, { project: other });
      assert.equal(answer.status, 201, answer.text);
    });

    test('refused: a signature by another key, for another purpose or another API key', async () => {
      const bundle = await server.signIn(nextEmail());
      const device = await webCryptoDevice();
      const impostor = await webCryptoDevice();
      assertProblem(await register(bundle, device, { signer: impostor }), 401, 'invalid_signature');
      assertProblem(await register(bundle, device, { purpose: 'device-signin' }), 401, 'invalid_signature');
      assertProblem(await register(bundle, device, { purpose: 'pin-signin' }), 401, 'invalid_signature');
      assertProblem(await register(bundle, device, { project: other }), 401, 'invalid_signature');
      const listed = await server.request('GET', '/v1/devices', { headers: bearer(bundle) });
      assert.deepEqual(listed.body.devices, []);
      assert.equal((await register(bundle, device)).status, 201);
    });

    test("another user's registration challenge → challenge_not_found; a used one → challenge_used", async () => {
      const alice = await server.signIn(nextEmail());
      const bob = await server.signIn(nextEmail());
      const device = await webCryptoDevice();
      const { challenge_id, nonce } = await startRegistration(alice);
      const body = {
        challenge_id,
        public_key: device.jwk,
        signature: await device.sign(
          signedText('device-register', server.project.api_key_id, challenge_id, nonce),
        ),
      };
      assertProblem(
        await server.request('POST', '/v1/devices', { body, headers: bearer(bob) }),
        400,
        'challenge_not_found',
      );
      assertProblem(
        await server.request('POST', '/v1/devices', { body, headers: bearer(alice) }),
        400,
        'challenge_used',
      );
    });

    test('an expired registration challenge → challenge_expired', async () => {
      const bundle = await server.signIn(nextEmail());
      const device = await webCryptoDevice();
      const { challenge_id, nonce } = await startRegistration(bundle);
      clock.t += 121_000;
      const answer = await server.request('POST', '/v1/devices', {
        body: {
          challenge_id,
          public_key: device.jwk,
          signature: await device.sign(
            signedText('device-register', server.project.api_key_id, challenge_id, nonce),
          ),
        },
        headers: bearer(bundle),
      });
      assertProblem(answer, 400, 'challenge_expired');
    });

    test('a missing or invalid Bearer token → 401 with WWW-Authenticate on every device route', async () => {
      const routes: Array<[string, string]> = [
        ['POST', '/v1/devices/register/start'],
        ['POST', '/v1/devices'],
        ['GET', '/v1/devices'],
        ['PATCH', '/v1/devices/dev_x'],
        ['DELETE', '/v1/devices/dev_x'],
      ];
      const body = { challenge_id: 'ch_x', public_key: {}, signature: 'AA', name: 'x' };
      for (const [method, path] of routes) {
        const missing = await server.request(
          method,
          path,
          method === 'GET' || method === 'DELETE' ? {} : { body },
        );
        assertProblem(missing, 401, 'unauthorized');
        assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera"/);
        const invalid = await server.request(method, path, {
          ...(method === 'GET' || method === 'DELETE' ? {} : { body }),
          headers: { authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.e30.AAAA' },
        });
        assertProblem(invalid, 401, 'invalid_token');
        assert.match(invalid.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
      }
    });
  });

  describe('sign-in', () => {
    test('a bundle with auth_method "TRUSTED DEVICE", claim TRUSTED_DEVICE, session bound to the device', async () => {
      const { email, deviceId, device, userId } = await userWithDevice();
      const started = await startSignIn(deviceId);
      assert.equal(started.status, 200, started.text);
      assert.deepEqual(Object.keys(started.body).sort(), ['challenge_id', 'expires_in', 'nonce']);
      assert.equal(started.body.expires_in, 120);
      const { challenge_id, nonce } = started.body;
      const answer = await complete(
        challenge_id,
        await device.sign(signedText('device-signin', server.project.api_key_id, challenge_id, nonce)),
      );
      assert.equal(answer.status, 200, answer.text);
      const bundle = answer.body.oauth_token as OAuthTokenBundle;
      assert.equal(bundle.auth_method, 'TRUSTED DEVICE');
      assert.equal(bundle.token_type, 'Bearer');
      assert.equal(bundle.expires_in, 3600);
      const claims = decodeJwt(bundle.access_token);
      assert.equal(claims.authentication_method, 'TRUSTED_DEVICE');
      assert.equal(claims.sub, userId);
      assert.equal(claims.identifier, email);
      assert.equal(claims.aud, server.project.api_key_id);
      assert.deepEqual(await verify(bundle), { success: true });
      const session = await db()
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', claims.sid as string)
        .executeTakeFirstOrThrow();
      assert.equal(session.device_id, deviceId);
      assert.equal(session.auth_method, 'TRUSTED DEVICE');
      assert.equal(session.user_id, userId);
    });

    test('getOAuthToken false → only user_id and auth_method', async () => {
      const { deviceId, device, userId } = await userWithDevice();
      const answer = await signInWith(device, deviceId, false);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { user_id: userId, auth_method: 'TRUSTED DEVICE' });
    });

    test('DER signatures (iOS and Android key stores) are accepted', async () => {
      const { deviceId, device } = await userWithDevice(derDevice());
      const answer = await signInWith(device, deviceId);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.oauth_token.auth_method, 'TRUSTED DEVICE');
    });

    test('a replayed challenge → challenge_used', async () => {
      const { deviceId, device } = await userWithDevice();
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      const signature = await device.sign(
        signedText('device-signin', server.project.api_key_id, challenge_id, nonce),
      );
      assert.equal((await complete(challenge_id, signature)).status, 200);
      assertProblem(await complete(challenge_id, signature), 400, 'challenge_used');
    });

    test('expired after 120 s (clock + 121 s) → challenge_expired; at 119 s it still works', async () => {
      const { deviceId, device } = await userWithDevice();
      const early = (await startSignIn(deviceId)).body;
      const late = (await startSignIn(deviceId)).body;
      clock.t += 119_000;
      const ok = await complete(
        early.challenge_id,
        await device.sign(
          signedText('device-signin', server.project.api_key_id, early.challenge_id, early.nonce),
        ),
      );
      assert.equal(ok.status, 200, ok.text);
      clock.t += 2_000;
      const expired = await complete(
        late.challenge_id,
        await device.sign(
          signedText('device-signin', server.project.api_key_id, late.challenge_id, late.nonce),
        ),
      );
      assertProblem(expired, 400, 'challenge_expired');
    });

    test("a challenge of project A completed with project B's API key → challenge_not_found", async () => {
      const { deviceId, device } = await userWithDevice();
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      for (const apiKeyId of [server.project.api_key_id, other.api_key_id]) {
        const signature = await device.sign(signedText('device-signin', apiKeyId, challenge_id, nonce));
        assertProblem(await complete(challenge_id, signature, other), 400, 'challenge_not_found');
      }
      // Project B does not know the device either.
      assertProblem(await startSignIn(deviceId, other), 400, 'device_not_found');
      // The challenge was not spent by the foreign attempts.
      const signature = await device.sign(
        signedText('device-signin', server.project.api_key_id, challenge_id, nonce),
      );
      assert.equal((await complete(challenge_id, signature)).status, 200);
    });

    test('a forged signature → 401 invalid_signature, and the challenge is spent', async () => {
      const { deviceId, device } = await userWithDevice();
      const impostor = await webCryptoDevice();
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      const text = signedText('device-signin', server.project.api_key_id, challenge_id, nonce);
      assertProblem(await complete(challenge_id, await impostor.sign(text)), 401, 'invalid_signature');
      assertProblem(await complete(challenge_id, await device.sign(text)), 400, 'challenge_used');
    });

    test('refused: signatures for another purpose, API key, challenge or nonce, and garbage', async () => {
      const { deviceId, device } = await userWithDevice();
      const key = server.project.api_key_id;
      const cases: Array<(id: string, nonce: string) => Promise<string>> = [
        (id, nonce) => device.sign(signedText('device-register', key, id, nonce)),
        (id, nonce) => device.sign(signedText('pin-signin', key, id, nonce)),
        (id, nonce) => device.sign(signedText('device-signin', other.api_key_id, id, nonce)),
        (_id, nonce) => device.sign(signedText('device-signin', key, 'ch_other', nonce)),
        (id) => device.sign(signedText('device-signin', key, id, 'another-nonce')),
        (id, nonce) => device.sign(`${signedText('device-signin', key, id, nonce)}\n`),
        async () => Buffer.alloc(64).toString('base64url'),
        async () => 'not+base64url/',
        async () => Buffer.from([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]).toString('base64url'),
      ];
      for (const signatureOf of cases) {
        const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
        assertProblem(
          await complete(challenge_id, await signatureOf(challenge_id, nonce)),
          401,
          'invalid_signature',
        );
      }
    });

    test('an unknown device → device_not_found; a missing API key → 401', async () => {
      assertProblem(await startSignIn('dev_unknown'), 400, 'device_not_found');
      const answer = await server.request('POST', '/v1/auth/device/start', { body: { device_id: 'dev_x' } });
      assertProblem(answer, 401, 'missing_api_key');
    });

    test('last_used_at is recorded', async () => {
      const { bundle, deviceId, device } = await userWithDevice();
      clock.t += 5_000;
      assert.equal((await signInWith(device, deviceId)).status, 200);
      const listed = await server.request('GET', '/v1/devices', { headers: bearer(bundle) });
      assert.equal(listed.body.devices[0].last_used_at, new Date(clock.t).toISOString());
    });

    test('sign-in events are recorded in audit_events (success and failure)', async () => {
      const { deviceId, device, userId } = await userWithDevice();
      assert.equal((await signInWith(device, deviceId)).status, 200);
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      const forged = Buffer.alloc(64, 1).toString('base64url');
      assert.equal((await complete(challenge_id, forged)).status, 401);
      const events = await db()
        .selectFrom('audit_events')
        .select(['type', 'data', 'project_id'])
        .where('user_id', '=', userId)
        .where('type', 'in', ['signin.succeeded', 'signin.failed', 'device.added'])
        .execute();
      const seen = events
        .map((e) => ({ type: e.type, data: JSON.parse(e.data), project: e.project_id }))
        .filter((e) => e.data.method !== 'OTP')
        .sort((a, b) => a.type.localeCompare(b.type));
      const project = server.project.project_id;
      assert.deepEqual(seen, [
        { type: 'device.added', data: { device_id: deviceId }, project },
        {
          type: 'signin.failed',
          data: { method: 'TRUSTED DEVICE', reason: 'invalid_signature', device_id: deviceId },
          project,
        },
        { type: 'signin.succeeded', data: { method: 'TRUSTED DEVICE', device_id: deviceId }, project },
      ]);
      for (const event of events) {
        assert.ok(!event.data.includes(nonce), 'no nonce in the audit log');
        assert.ok(!event.data.includes(forged), 'no signature in the audit log');
      }
    });
  });

  describe('management', () => {
    test('list, rename and remove devices; another user cannot touch them', async () => {
      const { bundle, deviceId } = await userWithDevice();
      clock.t += 1_000;
      const second = await register(bundle, await webCryptoDevice(), { name: 'Phone' });
      assert.equal(second.status, 201, second.text);
      const listed = await server.request('GET', '/v1/devices', { headers: bearer(bundle) });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.devices.map((d: { device_id: string; name: string }) => [d.device_id, d.name]),
        [
          [deviceId, 'Trusted device'],
          [second.body.device_id, 'Phone'],
        ],
      );

      const renamed = await server.request('PATCH', `/v1/devices/${deviceId}`, {
        body: { name: ' Work laptop ' },
        headers: bearer(bundle),
      });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.name, 'Work laptop');
      assert.equal(renamed.body.device_id, deviceId);
      assertProblem(
        await server.request('PATCH', `/v1/devices/${deviceId}`, {
          body: { name: '   ' },
          headers: bearer(bundle),
        }),
        400,
        'invalid_request',
      );

      const stranger = await server.signIn(nextEmail());
      assertProblem(
        await server.request('PATCH', `/v1/devices/${deviceId}`, {
          body: { name: 'mine' },
          headers: bearer(stranger),
        }),
        404,
        'device_not_found',
      );
      assertProblem(
        await server.request('DELETE', `/v1/devices/${deviceId}`, { headers: bearer(stranger) }),
        404,
        'device_not_found',
      );
      assert.deepEqual((await server.request('GET', '/v1/devices', { headers: bearer(stranger) })).body, {
        devices: [],
      });

      const removed = await server.request('DELETE', `/v1/devices/${deviceId}`, { headers: bearer(bundle) });
      assert.equal(removed.status, 204, removed.text);
      assertProblem(
        await server.request('DELETE', `/v1/devices/${deviceId}`, { headers: bearer(bundle) }),
        404,
        'device_not_found',
      );
      const after = await server.request('GET', '/v1/devices', { headers: bearer(bundle) });
      assert.deepEqual(
        after.body.devices.map((d: { device_id: string }) => d.device_id),
        [second.body.device_id],
      );
    });

    test('a removed device cannot start or finish a sign-in', async () => {
      const { bundle, deviceId, device } = await userWithDevice();
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      assert.equal(
        (await server.request('DELETE', `/v1/devices/${deviceId}`, { headers: bearer(bundle) })).status,
        204,
      );
      assertProblem(await startSignIn(deviceId), 400, 'device_not_found');
      const signature = await device.sign(
        signedText('device-signin', server.project.api_key_id, challenge_id, nonce),
      );
      assertProblem(await complete(challenge_id, signature), 400, 'device_not_found');
    });

    test('removing a device revokes the sessions it started, and only those', async () => {
      const { bundle: otpSession, deviceId, device, userId } = await userWithDevice();
      const otherDevice = await webCryptoDevice();
      const otherId = (await register(otpSession, otherDevice)).body.device_id as string;
      const first = (await signInWith(device, deviceId)).body.oauth_token as OAuthTokenBundle;
      const second = (await signInWith(device, deviceId)).body.oauth_token as OAuthTokenBundle;
      const viaOther = (await signInWith(otherDevice, otherId)).body.oauth_token as OAuthTokenBundle;
      for (const bundle of [first, second, viaOther, otpSession])
        assert.deepEqual(await verify(bundle), { success: true });

      assert.equal(
        (await server.request('DELETE', `/v1/devices/${deviceId}`, { headers: bearer(otpSession) })).status,
        204,
      );

      for (const bundle of [first, second]) {
        const refreshed = await refresh(bundle);
        assert.equal(refreshed.status, 400, refreshed.text);
        assert.equal(refreshed.body.error, 'invalid_grant');
        assert.deepEqual(await verify(bundle), { success: false, reason: VerifyReasons.revoked });
      }
      for (const bundle of [viaOther, otpSession]) {
        assert.deepEqual(await verify(bundle), { success: true });
        assert.equal((await refresh(bundle)).status, 200);
      }
      const sessions = await db()
        .selectFrom('sessions')
        .select(['device_id', 'revoked_reason'])
        .where('user_id', '=', userId)
        .where('revoked_at', 'is not', null)
        .execute();
      assert.equal(sessions.length, 2);
      for (const s of sessions) assert.equal(s.revoked_reason, 'device_removed');
      const removal = await db()
        .selectFrom('audit_events')
        .select('data')
        .where('user_id', '=', userId)
        .where('type', '=', 'device.removed')
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(removal.data), { device_id: deviceId, sessions_revoked: 2 });
    });
  });

  // Issue 12: a lenient base64url decoder ignores the unused bits of the last character; the
  // service takes one spelling of each signature's bytes. (Both s, high and low, are accepted since
  // issue 30: device-signers.test.ts.)
  describe('one spelling per signature', () => {
    /** A fresh sign-in challenge and the text the device signs for it. */
    const challengeFor = async (deviceId: string) => {
      const { challenge_id, nonce } = (await startSignIn(deviceId)).body;
      return {
        challenge_id,
        text: signedText('device-signin', server.project.api_key_id, challenge_id, nonce),
      };
    };

    test('sign-in: a valid signature respelled with its unused last bits set → 401 invalid_signature', async () => {
      const { deviceId, device } = await userWithDevice();
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      for (let bits = 1; bits <= 15; bits++) {
        const { challenge_id, text } = await challengeFor(deviceId);
        const signature = await device.sign(text);
        assert.equal(signature.length, 86, 'raw r‖s: 64 bytes, 4 unused bits in the last character');
        const respelled = signature.slice(0, -1) + alphabet[alphabet.indexOf(signature.at(-1)!) | bits];
        assert.ok(Buffer.from(respelled, 'base64url').equals(Buffer.from(signature, 'base64url')));
        assertProblem(await complete(challenge_id, respelled), 401, 'invalid_signature');
      }
    });
  });
});
