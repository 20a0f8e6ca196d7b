import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { Database } from '../../src/db/schema.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  assertProblem,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { lowS } from '../helpers/sign-in-methods.js';

const ENV = RELAXED_LIMITS;

const nextEmail = () => uniqueEmail('users');

/** A device as an app holds it: a WebCrypto P-256 key pair whose private key never leaves it. */
interface TestDevice {
  deviceId: string;
  keys: CryptoKeyPair;
}

async function sign(keys: CryptoKeyPair, message: string): Promise<string> {
  const signature = await crypto.subtle.sign(
    { name: 'ECDSA', hash: 'SHA-256' },
    keys.privateKey,
    new TextEncoder().encode(message),
  );
  return lowS(signature).toString('base64url'); // raw r‖s, s made low as apps must
}

async function registerDevice(
  server: TestServer,
  bundle: OAuthTokenBundle,
  project: ProjectCredentials = server.project,
): Promise<TestDevice> {
  const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, [
    'sign',
    'verify',
  ]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', keys.publicKey);
  const authorization = `Bearer ${bundle.access_token}`;
  const start = await server.request('POST', '/v1/devices/register/start', { headers: { authorization } });
  assert.equal(start.status, 200, start.text);
  const { challenge_id, nonce } = start.body;
  const signature = await sign(
    keys,
    `tessera/v1/device-register\n${project.api_key_id}\n${challenge_id}\n${nonce}`,
  );
  const registered = await server.request('POST', '/v1/devices', {
    body: { challenge_id, public_key: { kty, crv, x, y }, signature, name: 'Test phone' },
    headers: { authorization },
  });
  assert.equal(registered.status, 201, registered.text);
  return { deviceId: registered.body.device_id, keys };
}

async function deviceSignIn(server: TestServer, device: TestDevice, project = server.project) {
  const headers = { api_key_id: project.api_key_id };
  const start = await server.request('POST', '/v1/auth/device/start', {
    body: { device_id: device.deviceId },
    headers,
  });
  if (start.status !== 200) return start;
  const { challenge_id, nonce } = start.body;
  const signature = await sign(
    device.keys,
    `tessera/v1/device-signin\n${project.api_key_id}\n${challenge_id}\n${nonce}`,
  );
  return server.request('POST', '/v1/auth/device/complete', {
    body: { challenge_id, signature, getOAuthToken: true },
    headers,
  });
}

/**
 * A passkey row as a completed WebAuthn registration stores it (the ceremony itself is covered
 * by the biometric suite); here only the integrator's listing and removal matter.
 */
async function insertPasskey(
  server: TestServer,
  userId: string,
  projectId: string,
  at: number,
): Promise<string> {
  const id = randomBytes(16).toString('base64url');
  await server.storage.db.kysely
    .insertInto('passkeys')
    .values({
      id,
      project_id: projectId,
      user_id: userId,
      public_key: randomBytes(77).toString('base64url'),
      counter: 0,
      transports: '["internal"]',
      device_type: 'multiDevice',
      backed_up: 1,
      aaguid: null,
      name: 'Laptop',
      created_at: at,
      last_used_at: null,
    })
    .execute();
  return id;
}

async function refresh(
  server: TestServer,
  refreshToken: string,
  project = server.project,
): Promise<TestResponse> {
  return server.request('POST', '/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: project.api_key_id },
  });
}

async function verify(server: TestServer, accessToken: string, apiKeyId = server.project.api_key_id) {
  const response = await server.request('POST', '/verify', {
    body: { oauth_token: { access_token: accessToken } },
    headers: { api_key_id: apiKeyId },
  });
  assert.equal(response.status, 200, response.text);
  return response.body as { success: boolean; reason?: string };
}

eachDialect('users, sessions, devices and passkeys (integrator API)', (dialect) => {
  let server: TestServer;
  let projectB: ProjectCredentials;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
    projectB = await server.ctx.projects.create({ name: 'b' });
  });
  after(() => server.close());

  /** Integrator call with project A's secret unless another project is given. */
  function api(method: string, path: string, body?: unknown, project: ProjectCredentials = server.project) {
    return server.request(method, path, {
      ...(body !== undefined ? { body } : {}),
      headers: { authorization: basicAuth(project) },
    });
  }

  async function newUser(email = nextEmail(), project = server.project) {
    const bundle = await server.signIn(email, project);
    return { email, bundle, userId: decodeJwt(bundle.access_token).sub! };
  }

  test('GET a user by id and by identifier (normalised)', async () => {
    const createdAt = clock.t;
    const { email, userId } = await newUser();
    const byId = await api('GET', `/v1/users/${userId}`);
    assert.equal(byId.status, 200, byId.text);
    assert.deepEqual(byId.body, {
      user_id: userId,
      identifier: email,
      identifier_type: 'email',
      client_user_id: userId, // none set: the user's id, as in the tokens
      created_at: new Date(createdAt).toISOString(),
      last_sign_in_at: new Date(createdAt).toISOString(),
    });

    for (const written of [email, email.toUpperCase(), `  ${email.replace('users', 'USERS')}\t`]) {
      const found = await api('GET', `/v1/users?identifier=${encodeURIComponent(written)}`);
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(found.body, byId.body);
    }

    const phone = await newUser('+1 (415) 555-0142');
    const phoneView = await api('GET', `/v1/users?identifier=${encodeURIComponent('0014155550142')}`);
    assert.equal(phoneView.status, 200, phoneView.text);
    assert.equal(phoneView.body.user_id, phone.userId);
    assert.equal(phoneView.body.identifier, '+14155550142');
    assert.equal(phoneView.body.identifier_type, 'phone');

    assertProblem(await api('GET', '/v1/users'), 400, 'invalid_request');
    assertProblem(
      await api('GET', `/v1/users?identifier=${encodeURIComponent('nobody@example.com')}`),
      404,
      'user_not_found',
    );
    assertProblem(await api('GET', '/v1/users?identifier=not-an-identifier'), 400, 'invalid_identifier');
    assertProblem(await api('GET', '/v1/users/no-such-user'), 404, 'user_not_found');
  });

  test('PATCH client_user_id: in both tokens issued afterwards; null clears it', async () => {
    const { email, bundle, userId } = await newUser();
    const patched = await api('PATCH', `/v1/users/${userId}`, { client_user_id: 'crm-4711' });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.client_user_id, 'crm-4711');
    assert.equal((await api('GET', `/v1/users/${userId}`)).body.client_user_id, 'crm-4711');

    const signedIn = await server.signIn(email);
    assert.equal(decodeJwt(signedIn.access_token).client_user_id, 'crm-4711');
    assert.equal(decodeJwt(signedIn.id_token).client_user_id, 'crm-4711');
    assert.equal(decodeJwt(signedIn.access_token).sub, userId);
    const refreshed = await refresh(server, bundle.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(decodeJwt(refreshed.body.access_token).client_user_id, 'crm-4711');
    assert.equal(decodeJwt(refreshed.body.id_token).client_user_id, 'crm-4711');

    const cleared = await api('PATCH', `/v1/users/${userId}`, { client_user_id: null });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.client_user_id, userId);
    const after = await server.signIn(email);
    assert.equal(decodeJwt(after.access_token).client_user_id, userId);
    assert.equal(decodeJwt(after.id_token).client_user_id, userId);
    const refreshedAgain = await refresh(server, refreshed.body.refresh_token);
    assert.equal(decodeJwt(refreshedAgain.body.access_token).client_user_id, userId);

    assertProblem(
      await api('PATCH', `/v1/users/${userId}`, { client_user_id: '   ' }),
      400,
      'invalid_request',
    );
    assertProblem(
      await api('PATCH', `/v1/users/${userId}`, { client_user_id: 'x'.repeat(256) }),
      400,
      'invalid_request',
    );
    assertProblem(await api('PATCH', `/v1/users/${userId}`, { client_user_id: 42 }), 400, 'invalid_request');
    assertProblem(
      await api('PATCH', `/v1/users/no-such-user`, { client_user_id: 'a' }),
      404,
      'user_not_found',
    );
    assert.equal((await api('GET', `/v1/users/${userId}`)).body.client_user_id, userId);
  });

  test('DELETE erases the user with PIN, devices, passkeys, claims and sessions; tokens are revoked at once', async () => {
    const { email, bundle, userId } = await newUser();
    const second = await server.signIn(email);
    const device = await registerDevice(server, bundle);
    const byDevice = await deviceSignIn(server, device);
    assert.equal(byDevice.status, 200, byDevice.text);
    const pin = await server.request('PUT', '/v1/pin', {
      body: { pin: '480213' },
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(pin.status, 200, pin.text);
    await insertPasskey(server, userId, server.project.project_id, clock.t);
    assert.equal((await api('PUT', `/v1/users/${userId}/claims`, { claims: { role: 'admin' } })).status, 200);
    const sessionIds = (
      await server.storage.db.kysely
        .selectFrom('sessions')
        .select('id')
        .where('user_id', '=', userId)
        .execute()
    ).map((s) => s.id);
    assert.equal(sessionIds.length, 3);
    const accessTokens = [bundle.access_token, second.access_token, byDevice.body.oauth_token.access_token];
    for (const token of accessTokens) assert.deepEqual(await verify(server, token), { success: true });

    const deleted = await api('DELETE', `/v1/users/${userId}`);
    assert.equal(deleted.status, 204, deleted.text);

    const db = server.storage.db.kysely;
    const count = async (
      table: 'users' | 'pins' | 'devices' | 'passkeys' | 'user_claims' | 'sessions',
      column: 'id' | 'user_id',
    ) => (await db.selectFrom(table).select(column).where(column, '=', userId).execute()).length;
    assert.equal(await count('users', 'id'), 0);
    for (const table of ['pins', 'devices', 'passkeys', 'user_claims', 'sessions'] as const)
      assert.equal(await count(table, 'user_id'), 0, `${table} still holds rows of the erased user`);
    const refreshRows = await db
      .selectFrom('refresh_tokens')
      .select('id')
      .where('session_id', 'in', sessionIds)
      .execute();
    assert.equal(refreshRows.length, 0);

    // No table keeps the identifier (audit entries stay, keyed by the opaque id only). Regression:
    // the one-time-code challenges kept it in clear after the erasure.
    const tables: Array<keyof Database> = [
      'projects',
      'signing_keys',
      'users',
      'otp_challenges',
      'rate_limits',
      'sessions',
      'refresh_tokens',
      'devices',
      'pins',
      'passkeys',
      'challenges',
      'audit_events',
      'user_claims',
      'session_revocations',
      'webhook_endpoints',
      'webhook_deliveries',
    ];
    for (const table of tables) {
      const rows = await db.selectFrom(table).selectAll().execute();
      assert.ok(!JSON.stringify(rows).toLowerCase().includes(email), `${table} still holds the identifier`);
    }

    // Access tokens fail /verify at once, here and on another instance on the same database.
    for (const token of accessTokens)
      assert.deepEqual(await verify(server, token), { success: false, reason: 'JWT token has been revoked' });
    const other = await startServer(dialect, {
      storage: server.storage,
      masterKey: server.masterKey,
      env: { ...ENV, TESSERA_ISSUER: server.url },
    });
    try {
      for (const token of accessTokens)
        assert.deepEqual(await verify(other, token, server.project.api_key_id), {
          success: false,
          reason: 'JWT token has been revoked',
        });
    } finally {
      await other.close();
    }
    const refreshed = await refresh(server, second.refresh_token);
    assert.equal(refreshed.status, 400, refreshed.text);
    assert.equal(refreshed.body.error, 'invalid_grant');
    const userinfo = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(userinfo.status, 401);
    assert.notEqual((await deviceSignIn(server, device)).status, 200);

    assertProblem(await api('GET', `/v1/users/${userId}`), 404, 'user_not_found');
    assertProblem(
      await api('GET', `/v1/users?identifier=${encodeURIComponent(email)}`),
      404,
      'user_not_found',
    );
    assertProblem(await api('DELETE', `/v1/users/${userId}`), 404, 'user_not_found');

    // The audit trail stays: the erasure itself is there, under the opaque user id.
    const audit = await api('GET', `/v1/audit?user_id=${userId}`);
    assert.equal(audit.status, 200, audit.text);
    const types = audit.body.events.map((e: { type: string }) => e.type);
    for (const type of ['user.deleted', 'signin.succeeded', 'device.added', 'pin.set', 'claims.changed'])
      assert.ok(types.includes(type), `audit lacks ${type}: ${types}`);
    const deletedEvent = audit.body.events.find((e: { type: string }) => e.type === 'user.deleted');
    assert.equal(deletedEvent.data.sessions_revoked, 3);
    assert.ok(!audit.text.toLowerCase().includes(email));

    // A new sign-in with the same identifier is a new user.
    const again = await newUser(email);
    assert.notEqual(again.userId, userId);
  });

  test('sessions: listed with method, device, created and last refreshed; revoke one, then all', async () => {
    const { email, bundle: first, userId } = await newUser();
    const t0 = clock.t;
    clock.t += 1000;
    const second = await server.signIn(email);
    const device = await registerDevice(server, first);
    clock.t += 1000;
    const byDevice = await deviceSignIn(server, device);
    assert.equal(byDevice.status, 200, byDevice.text);
    clock.t += 1000;
    const refreshedAt = clock.t;
    const refreshed = await refresh(server, first.refresh_token);
    assert.equal(refreshed.status, 200);

    const listed = await api('GET', `/v1/users/${userId}/sessions`);
    assert.equal(listed.status, 200, listed.text);
    const sessions = listed.body.sessions as Array<Record<string, unknown>>;
    assert.equal(sessions.length, 3);
    const sid = (b: OAuthTokenBundle) => decodeJwt(b.access_token).sid as string;
    const byId = new Map(sessions.map((s) => [s.session_id, s]));
    // PostgreSQL stamps a rotation with the grant's time plus the few ms its statement waited.
    const lastRefreshed = Date.parse(String(byId.get(sid(first))?.last_refreshed_at));
    assert.ok(lastRefreshed >= refreshedAt && lastRefreshed < refreshedAt + 5000, String(lastRefreshed));
    assert.deepEqual(byId.get(sid(first)), {
      session_id: sid(first),
      auth_method: 'OTP',
      device_id: null,
      client_id: null,
      ip_network: '127.0.0.0/24',
      created_at: new Date(t0).toISOString(),
      last_refreshed_at: new Date(lastRefreshed).toISOString(),
      expires_at: new Date(t0 + 30 * 86_400_000).toISOString(),
      revoked_at: null,
    });
    assert.equal(byId.get(sid(second))?.last_refreshed_at, null);
    assert.equal(byId.get(sid(second))?.created_at, new Date(t0 + 1000).toISOString());
    const deviceSession = byId.get(sid(byDevice.body.oauth_token));
    assert.equal(deviceSession?.auth_method, 'TRUSTED DEVICE');
    assert.equal(deviceSession?.device_id, device.deviceId);
    // Newest first.
    assert.equal(sessions[0]!.session_id, sid(byDevice.body.oauth_token));

    // Revoke one: its refresh token stops working and /verify says revoked; the others live on.
    const one = await api('POST', `/v1/users/${userId}/sessions/revoke`, { session_id: sid(second) });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, { revoked: 1 });
    const refusedRefresh = await refresh(server, second.refresh_token);
    assert.equal(refusedRefresh.status, 400);
    assert.equal(refusedRefresh.body.error, 'invalid_grant');
    assert.deepEqual(await verify(server, second.access_token), {
      success: false,
      reason: 'JWT token has been revoked',
    });
    assert.deepEqual(await verify(server, refreshed.body.access_token), { success: true });
    assert.equal((await api('GET', `/v1/users/${userId}/sessions`)).body.sessions.length, 2);
    const withRevoked = await api('GET', `/v1/users/${userId}/sessions?include_revoked=true`);
    const revokedView = withRevoked.body.sessions.find(
      (s: { session_id: string }) => s.session_id === sid(second),
    );
    assert.equal(revokedView.revoked_at, new Date(clock.t).toISOString());
    // Revoking it again changes nothing; an unknown session is 404.
    assert.deepEqual(
      (await api('POST', `/v1/users/${userId}/sessions/revoke`, { session_id: sid(second) })).body,
      {
        revoked: 0,
      },
    );
    assertProblem(
      await api('POST', `/v1/users/${userId}/sessions/revoke`, { session_id: 'no-such-session' }),
      404,
      'session_not_found',
    );
    assertProblem(
      await api('DELETE', `/v1/users/${userId}/sessions/no-such-session`),
      404,
      'session_not_found',
    );

    // DELETE one session by its path.
    const byPath = await api('DELETE', `/v1/users/${userId}/sessions/${sid(byDevice.body.oauth_token)}`);
    assert.equal(byPath.status, 204, byPath.text);
    assert.deepEqual(await verify(server, byDevice.body.oauth_token.access_token), {
      success: false,
      reason: 'JWT token has been revoked',
    });

    // Revoke all: without a body (regression: a missing body was refused as "body must be object").
    const third = await server.signIn(email);
    const all = await api('POST', `/v1/users/${userId}/sessions/revoke`);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body, { revoked: 2 });
    for (const b of [refreshed.body, third]) {
      assert.deepEqual(await verify(server, b.access_token), {
        success: false,
        reason: 'JWT token has been revoked',
      });
      assert.equal((await refresh(server, b.refresh_token)).status, 400);
    }
    assert.deepEqual((await api('GET', `/v1/users/${userId}/sessions`)).body, { sessions: [] });
    assert.equal(
      (await api('GET', `/v1/users/${userId}/sessions?include_revoked=true`)).body.sessions.length,
      4,
    );
    // An empty object means all as well.
    const fourth = await server.signIn(email);
    assert.deepEqual((await api('POST', `/v1/users/${userId}/sessions/revoke`, {})).body, { revoked: 1 });
    assert.deepEqual(await verify(server, fourth.access_token), {
      success: false,
      reason: 'JWT token has been revoked',
    });
    assertProblem(await api('GET', '/v1/users/no-such-user/sessions'), 404, 'user_not_found');
    assertProblem(
      await api('POST', `/v1/users/${userId}/sessions/revoke`, { session_id: 7 }),
      400,
      'invalid_request',
    );
  });

  test('devices and passkeys: listed and removed through the integrator API', async () => {
    const { bundle, userId } = await newUser();
    const device = await registerDevice(server, bundle);
    const byDevice = await deviceSignIn(server, device);
    assert.equal(byDevice.status, 200, byDevice.text);
    const passkeyId = await insertPasskey(server, userId, server.project.project_id, clock.t);

    const devices = await api('GET', `/v1/users/${userId}/devices`);
    assert.equal(devices.status, 200, devices.text);
    assert.equal(devices.body.devices.length, 1);
    assert.equal(devices.body.devices[0].device_id, device.deviceId);
    assert.equal(devices.body.devices[0].name, 'Test phone');
    assert.equal(devices.body.devices[0].created_at, new Date(clock.t).toISOString());
    assert.equal(devices.body.devices[0].last_used_at, new Date(clock.t).toISOString());
    assert.ok(!devices.text.includes('"x"'), 'the key material is not listed');

    const passkeys = await api('GET', `/v1/users/${userId}/passkeys`);
    assert.equal(passkeys.status, 200, passkeys.text);
    assert.deepEqual(passkeys.body.passkeys, [
      {
        passkey_id: passkeyId,
        name: 'Laptop',
        device_type: 'multiDevice',
        backed_up: true,
        created_at: new Date(clock.t).toISOString(),
        last_used_at: null,
      },
    ]);

    // Removing the device ends the sessions it started and its sign-ins.
    const removed = await api('DELETE', `/v1/users/${userId}/devices/${device.deviceId}`);
    assert.equal(removed.status, 204, removed.text);
    assert.deepEqual((await api('GET', `/v1/users/${userId}/devices`)).body, { devices: [] });
    assert.deepEqual(await verify(server, byDevice.body.oauth_token.access_token), {
      success: false,
      reason: 'JWT token has been revoked',
    });
    assert.deepEqual(await verify(server, bundle.access_token), { success: true });
    const signInAfter = await deviceSignIn(server, device);
    assertProblem(signInAfter, 400, 'device_not_found');
    assertProblem(
      await api('DELETE', `/v1/users/${userId}/devices/${device.deviceId}`),
      404,
      'device_not_found',
    );

    const removedPasskey = await api(
      'DELETE',
      `/v1/users/${userId}/passkeys/${encodeURIComponent(passkeyId)}`,
    );
    assert.equal(removedPasskey.status, 204, removedPasskey.text);
    assert.deepEqual((await api('GET', `/v1/users/${userId}/passkeys`)).body, { passkeys: [] });
    assertProblem(await api('DELETE', `/v1/users/${userId}/passkeys/${passkeyId}`), 404, 'passkey_not_found');

    const audit = await api('GET', `/v1/audit?user_id=${userId}`);
    const types = audit.body.events.map((e: { type: string }) => e.type);
    for (const type of ['device.added', 'device.removed', 'passkey.removed'])
      assert.ok(types.includes(type), type);
  });

  test("devices: renamed through the integrator API, with the rules of the user's own rename", async () => {
    const { bundle, userId } = await newUser();
    const device = await registerDevice(server, bundle);
    const path = `/v1/users/${userId}/devices/${device.deviceId}`;

    const renamed = await api('PATCH', path, { name: '  Work phone ' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual(Object.keys(renamed.body).sort(), ['created_at', 'device_id', 'last_used_at', 'name']);
    assert.equal(renamed.body.device_id, device.deviceId);
    assert.equal(renamed.body.name, 'Work phone');
    assert.equal(renamed.body.created_at, new Date(clock.t).toISOString());
    // Both the integrator's listing and the user's own see the new name.
    assert.equal((await api('GET', `/v1/users/${userId}/devices`)).body.devices[0].name, 'Work phone');
    const own = await server.request('GET', '/v1/devices', {
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(own.body.devices[0].name, 'Work phone');
    // The device keeps working.
    assert.equal((await deviceSignIn(server, device)).status, 200);

    // The same validation as PATCH /v1/devices/{device_id}.
    assertProblem(await api('PATCH', path, { name: '   ' }), 400, 'invalid_request');
    assertProblem(await api('PATCH', path, { name: '' }), 400, 'invalid_request');
    assertProblem(await api('PATCH', path, { name: 'x'.repeat(101) }), 400, 'invalid_request');
    assertProblem(await api('PATCH', path, { name: 42 }), 400, 'invalid_request');
    assertProblem(await api('PATCH', path, {}), 400, 'invalid_request');
    assert.equal((await api('PATCH', path, { name: 'y'.repeat(100) })).body.name, 'y'.repeat(100));

    // Another user's device, an unknown device, an unknown user.
    const other = await newUser();
    const othersDevice = await registerDevice(server, other.bundle);
    assertProblem(
      await api('PATCH', `/v1/users/${userId}/devices/${othersDevice.deviceId}`, { name: 'mine' }),
      404,
      'device_not_found',
    );
    assertProblem(
      await api('PATCH', `/v1/users/${userId}/devices/dev_unknown`, { name: 'x' }),
      404,
      'device_not_found',
    );
    assertProblem(
      await api('PATCH', `/v1/users/nobody/devices/${device.deviceId}`, { name: 'x' }),
      404,
      'user_not_found',
    );
    assert.equal((await api('GET', `/v1/users/${other.userId}/devices`)).body.devices[0].name, 'Test phone');
    // Without the secret: 401.
    assertProblem(await server.request('PATCH', path, { body: { name: 'x' } }), 401, 'invalid_client');
  });

  test("cross-project isolation: project B reaches none of project A's users through any endpoint", async () => {
    const { email, bundle, userId } = await newUser();
    const device = await registerDevice(server, bundle);
    const passkeyId = await insertPasskey(server, userId, server.project.project_id, clock.t);
    assert.equal((await api('PUT', `/v1/users/${userId}/claims`, { claims: { role: 'a' } })).status, 200);
    const sid = decodeJwt(bundle.access_token).sid as string;
    const u = `/v1/users/${userId}`;

    const calls: Array<[string, string, unknown?]> = [
      ['GET', u],
      ['PATCH', u, { client_user_id: 'stolen' }],
      ['DELETE', u],
      ['GET', `${u}/claims`],
      ['PUT', `${u}/claims`, { claims: { role: 'b' } }],
      ['DELETE', `${u}/claims`],
      ['GET', `${u}/sessions`],
      ['GET', `${u}/sessions?include_revoked=true`],
      ['POST', `${u}/sessions/revoke`, { session_id: sid }],
      ['POST', `${u}/sessions/revoke`],
      ['DELETE', `${u}/sessions/${sid}`],
      ['GET', `${u}/devices`],
      ['PATCH', `${u}/devices/${device.deviceId}`, { name: 'stolen' }],
      ['DELETE', `${u}/devices/${device.deviceId}`],
      ['GET', `${u}/passkeys`],
      ['DELETE', `${u}/passkeys/${passkeyId}`],
    ];
    for (const [method, path, body] of calls) {
      assertProblem(await api(method, path, body, projectB), 404, 'user_not_found');
      // Without credentials, or with a wrong secret: 401 before anything else.
      const anonymous = await server.request(method, path, { ...(body !== undefined ? { body } : {}) });
      assertProblem(anonymous, 401, 'invalid_client');
      const wrong = await api(method, path, body, {
        ...server.project,
        api_key_secret: projectB.api_key_secret,
      });
      assertProblem(wrong, 401, 'invalid_client');
    }
    // Looking up A's identifier with B's credentials finds nothing.
    assertProblem(
      await api('GET', `/v1/users?identifier=${encodeURIComponent(email)}`, undefined, projectB),
      404,
      'user_not_found',
    );
    assertProblem(
      await server.request('GET', `/v1/users?identifier=${encodeURIComponent(email)}`),
      401,
      'invalid_client',
    );

    // B's own user cannot be used as a handle on A's session, device or passkey.
    const inB = await newUser(nextEmail(), projectB);
    const b = `/v1/users/${inB.userId}`;
    assertProblem(
      await api('POST', `${b}/sessions/revoke`, { session_id: sid }, projectB),
      404,
      'session_not_found',
    );
    assertProblem(await api('DELETE', `${b}/sessions/${sid}`, undefined, projectB), 404, 'session_not_found');
    assertProblem(
      await api('PATCH', `${b}/devices/${device.deviceId}`, { name: 'stolen' }, projectB),
      404,
      'device_not_found',
    );
    assertProblem(
      await api('DELETE', `${b}/devices/${device.deviceId}`, undefined, projectB),
      404,
      'device_not_found',
    );
    assertProblem(
      await api('DELETE', `${b}/passkeys/${passkeyId}`, undefined, projectB),
      404,
      'passkey_not_found',
    );
    // And A's user id is unknown to B's listing of itself.
    assertProblem(await api('GET', `/v1/users/${userId}`, undefined, projectB), 404, 'user_not_found');

    // Project A's user is untouched.
    const view = await api('GET', u);
    assert.equal(view.status, 200);
    assert.equal(view.body.client_user_id, userId);
    assert.deepEqual((await api('GET', `${u}/claims`)).body, { claims: { role: 'a' } });
    assert.equal((await api('GET', `${u}/sessions`)).body.sessions.length, 1);
    assert.deepEqual(
      (await api('GET', `${u}/devices`)).body.devices.map((d: { name: string }) => d.name),
      ['Test phone'],
    );
    assert.equal((await api('GET', `${u}/passkeys`)).body.passkeys.length, 1);
    assert.deepEqual(await verify(server, bundle.access_token), { success: true });
  });
});
