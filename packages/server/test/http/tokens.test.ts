import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { eachDialect, startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import {
  deviceSignIn,
  otpUser,
  passkeySignIn,
  registerDevice,
  registerPasskey,
  setPin,
} from '../helpers/sign-in-methods.js';
import {
  ACCESS_CLAIMS,
  assertSpecAccessToken,
  assertSpecBundle,
  assertSpecIdToken,
  assertSpecTokens,
  ID_CLAIMS,
  sorted,
  verifyAccess,
  verifyId,
} from '../helpers/token-format.js';

const PUBLIC_JWK_MEMBERS = new Set(['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use']);
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

/** Plenty of requests per IP: these suites sign in many times from loopback. */
const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60' };

const nextEmail = () => uniqueEmail('user');

eachDialect('token bundle and JWT formats', (dialect) => {
  let server: TestServer;
  let nowMs = Date.now();
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: () => nowMs });
  });
  after(() => server.close());

  test('the bundle has exactly the specified members and values', async () => {
    const bundle = await server.signIn(nextEmail());
    assertSpecBundle(bundle, { method: 'OTP' });
  });

  test('the access token verifies with jose and has exactly the specified claims', async () => {
    const email = nextEmail();
    const bundle = await server.signIn(email);
    await assertSpecAccessToken(server, bundle.access_token, { method: 'OTP', identifier: email, at: nowMs });
  });

  test('the ID token has exactly the specified claims, auth_time a string of digits', async () => {
    const email = nextEmail();
    const bundle = await server.signIn(email);
    await assertSpecIdToken(server, bundle, { method: 'OTP', identifier: email, at: nowMs });
  });

  // The other methods end in the same bundle: the same exact checks, after a sign-in by each.
  test('TRUSTED DEVICE: the bundle, access token and ID token match the specification exactly', async () => {
    const user = await otpUser(server, nextEmail());
    const device = await registerDevice(server, user);
    nowMs += 60_000;
    try {
      const answer = await deviceSignIn(server, device);
      assert.equal(answer.status, 200, answer.text);
      await assertSpecTokens(server, answer.body.oauth_token, {
        method: 'TRUSTED DEVICE',
        identifier: user.email,
        userId: user.userId,
        at: nowMs,
      });
    } finally {
      nowMs = Date.now();
    }
  });

  test('PIN: the bundle, access token and ID token match the specification exactly', async () => {
    const user = await otpUser(server, nextEmail());
    const device = await registerDevice(server, user);
    await setPin(server, user, '73915062');
    nowMs += 60_000;
    try {
      const answer = await deviceSignIn(server, device, { pin: '73915062' });
      assert.equal(answer.status, 200, answer.text);
      await assertSpecTokens(server, answer.body.oauth_token, {
        method: 'PIN',
        identifier: user.email,
        userId: user.userId,
        at: nowMs,
      });
    } finally {
      nowMs = Date.now();
    }
  });

  test('BIOMETRIC: the bundle, access token and ID token match the specification exactly (discoverable and identifier-first)', async () => {
    const user = await otpUser(server, nextEmail());
    const authenticator = await registerPasskey(server, user);
    nowMs += 60_000;
    try {
      for (const identifier of [undefined, user.email]) {
        const answer = await passkeySignIn(server, authenticator, { identifier });
        assert.equal(answer.status, 200, answer.text);
        await assertSpecTokens(server, answer.body.oauth_token, {
          method: 'BIOMETRIC',
          identifier: user.email,
          userId: user.userId,
          at: nowMs,
        });
      }
    } finally {
      nowMs = Date.now();
    }
  });

  test('an ID token is not accepted where an access token is expected (typ differs)', async () => {
    const bundle = await server.signIn(nextEmail());
    await assert.rejects(verifyAccess(server, bundle.id_token), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
    await assert.rejects(verifyId(server, bundle.access_token), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });

  test('auth_time stays the time of the authentication across refreshes', async () => {
    const signedInAt = nowMs;
    const bundle = await server.signIn(nextEmail());
    nowMs += 120_000;
    try {
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: bundle.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 200, refreshed.body?.error);
      const id = decodeJwt(refreshed.body.id_token);
      assert.equal(id.auth_time, String(Math.floor(signedInAt / 1000)));
      assert.equal(id.iat, Math.floor(nowMs / 1000));
    } finally {
      nowMs = Date.now();
    }
  });

  test('jti is unique across every token issued', async () => {
    const bundles: OAuthTokenBundle[] = [];
    for (let i = 0; i < 4; i++) bundles.push(await server.signIn(nextEmail()));
    let current = bundles[0]!;
    for (let i = 0; i < 3; i++) {
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: current.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 200, refreshed.body?.error);
      current = refreshed.body;
      bundles.push(current);
    }
    const jtis = bundles.flatMap((b) => [decodeJwt(b.access_token).jti, decodeJwt(b.id_token).jti]);
    for (const jti of jtis) assert.equal(typeof jti, 'string');
    assert.equal(new Set(jtis).size, jtis.length);
  });

  test('the refresh token is opaque (not a JWT) with at least 256 bits of randomness', async () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const { refresh_token: token } = await server.signIn(nextEmail());
      tokens.add(token);
      assert.throws(() => decodeJwt(token));
      assert.notEqual(token.split('.').length, 3);
      // The secret part: base64url, at least 32 bytes.
      const secret = token.slice(token.lastIndexOf('.') + 1);
      assert.match(secret, /^[A-Za-z0-9_-]+$/);
      assert.ok(Buffer.from(secret, 'base64url').length >= 32, `secret too short in ${token.length} chars`);
    }
    assert.equal(tokens.size, 3);
  });

  test('a project with numericAuthTime gets a numeric auth_time', async () => {
    const project = await server.ctx.projects.create({
      name: 'strict-oidc',
      origins: ['http://strict.test'],
      numericAuthTime: true,
    });
    const bundle = await server.signIn(nextEmail(), project);
    const { payload } = await verifyId(server, bundle.id_token, project.api_key_id);
    assert.equal(typeof payload.auth_time, 'number');
    assert.equal(payload.auth_time, Math.floor(nowMs / 1000));
    assert.deepEqual(sorted(payload), ID_CLAIMS);
    // The access token is unchanged by the setting.
    const access = await verifyAccess(server, bundle.access_token, project.api_key_id);
    assert.deepEqual(sorted(access.payload), ACCESS_CLAIMS);
  });

  test('the JWKS has Cache-Control and only public key members', async () => {
    const response = await server.request('GET', '/.well-known/jwks.json');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    const cacheControl = response.headers.get('cache-control') ?? '';
    assert.match(cacheControl, /max-age=\d+/);
    assert.doesNotMatch(cacheControl, /no-store|private/);
    const keys = response.body.keys as Array<Record<string, unknown>>;
    assert.ok(Array.isArray(keys) && keys.length > 0);
    for (const key of keys) {
      for (const member of PRIVATE_JWK_MEMBERS) assert.equal(member in key, false, `JWKS leaks ${member}`);
      for (const member of Object.keys(key))
        assert.ok(PUBLIC_JWK_MEMBERS.has(member), `unexpected ${member}`);
      assert.equal(key.kty, 'EC');
      assert.equal(key.crv, 'P-256');
      assert.equal(key.alg, 'ES256');
      assert.equal(key.use, 'sig');
      assert.equal(typeof key.kid, 'string');
    }
    assert.doesNotMatch(response.text, /"d"\s*:/);
    const bundle = await server.signIn(nextEmail());
    const kid = decodeProtectedHeader(bundle.access_token).kid;
    assert.ok(keys.some((k) => k.kid === kid));
  });

  test('openid-configuration names the issuer and a jwks_uri that serves the keys', async () => {
    const response = await server.request('GET', '/.well-known/openid-configuration');
    assert.equal(response.status, 200);
    assert.equal(response.body.issuer, server.url);
    assert.equal(response.body.jwks_uri, `${server.url}/.well-known/jwks.json`);
    assert.ok((response.body.id_token_signing_alg_values_supported as string[]).includes('ES256'));
    const jwks = await fetch(response.body.jwks_uri);
    assert.equal(jwks.status, 200);
    const body = (await jwks.json()) as { keys: unknown[] };
    assert.ok(body.keys.length > 0);
  });

  test('openid-configuration has every member OpenID Connect Discovery requires, and describes the code flow', async () => {
    const { body } = await server.request('GET', '/.well-known/openid-configuration');
    // OpenID Connect Discovery 1.0 §3, REQUIRED members.
    for (const member of [
      'issuer',
      'authorization_endpoint',
      'token_endpoint',
      'jwks_uri',
      'response_types_supported',
      'subject_types_supported',
      'id_token_signing_alg_values_supported',
    ])
      assert.ok(member in body, member);
    assert.deepEqual(body.response_types_supported, ['code']);
    assert.deepEqual(body.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(body.code_challenge_methods_supported, ['S256']);
    assert.equal(body.authorization_response_iss_parameter_supported, true);
    assert.equal(body.end_session_endpoint, `${server.url}/oauth/logout`);
    // An unknown client is shown an error page, never redirected.
    const authorize = await fetch(
      `${body.authorization_endpoint}?response_type=code&client_id=x&redirect_uri=https://evil.test/`,
      {
        redirect: 'manual',
      },
    );
    assert.equal(authorize.status, 400);
    assert.equal(authorize.headers.get('location'), null);
    assert.match(authorize.headers.get('content-type') ?? '', /^text\/html/);
  });

  test('oauth-authorization-server (RFC 8414) has the same issuer and endpoints', async () => {
    const response = await server.request('GET', '/.well-known/oauth-authorization-server', {
      headers: { origin: 'https://any.test' },
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('access-control-allow-origin') ?? '', /\*/);
    const oauth = response.body;
    const oidc = (await server.request('GET', '/.well-known/openid-configuration')).body;
    assert.equal(oauth.issuer, server.url);
    assert.deepEqual(oauth.response_types_supported, ['code']);
    for (const member of [
      'authorization_endpoint',
      'token_endpoint',
      'jwks_uri',
      'revocation_endpoint',
      'introspection_endpoint',
    ])
      assert.equal(oauth[member], oidc[member], member);
    assert.deepEqual(oauth.introspection_endpoint_auth_methods_supported, ['client_secret_basic']);
  });
});

eachDialect('token lifetimes are configurable', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, {
      env: { ...ENV, TESSERA_ACCESS_TOKEN_TTL: '600', TESSERA_ID_TOKEN_TTL: '900' },
    });
  });
  after(() => server.close());

  test('TESSERA_ACCESS_TOKEN_TTL changes expires_in and exp', async () => {
    const bundle = await server.signIn(nextEmail());
    assert.equal(bundle.expires_in, 600);
    const { payload } = await verifyAccess(server, bundle.access_token);
    assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 600);
    const id = await verifyId(server, bundle.id_token);
    assert.equal((id.payload.exp ?? 0) - (id.payload.iat ?? 0), 900);
  });
});
