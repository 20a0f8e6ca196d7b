import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import * as claimsRepository from '../../src/modules/claims/claims.repository.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import { signJwt } from '../../src/tokens/jwt.js';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

const ENV = RELAXED_LIMITS;

const nextEmail = () => uniqueEmail('introspect');

eachDialect('introspection (RFC 7662) and userinfo', (dialect) => {
  let server: TestServer;
  let projectB: ProjectCredentials;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
    projectB = await server.ctx.projects.create({ name: 'b' });
  });
  after(() => server.close());

  /** RFC 7662 §2.1: a form-encoded POST, the client authenticated with HTTP Basic. */
  function introspect(
    token: string,
    authorization: string | null = basicAuth(server.project),
    hint?: string,
  ) {
    const form = new URLSearchParams({ token, ...(hint ? { token_type_hint: hint } : {}) });
    return server.request('POST', '/oauth/introspect', {
      raw: form.toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(authorization === null ? {} : { authorization }),
      },
    });
  }

  function assertInactive(response: TestResponse): void {
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { active: false });
    assert.equal(response.headers.get('cache-control'), 'no-store');
  }

  async function refresh(bundle: OAuthTokenBundle): Promise<TestResponse> {
    return server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        refresh_token: bundle.refresh_token,
        client_id: server.project.api_key_id,
      },
    });
  }

  test('an access token is active, with its claims (custom claims included)', async () => {
    const email = nextEmail();
    const first = await server.signIn(email);
    const userId = decodeJwt(first.access_token).sub!;
    const put = await server.request('PUT', `/v1/users/${userId}/claims`, {
      body: { claims: { role: 'admin' } },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(put.status, 200, put.text);
    const bundle = await server.signIn(email);
    const claims = decodeJwt(bundle.access_token);

    const response = await introspect(bundle.access_token);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(response.body.active, true);
    assert.equal(response.body.token_type, 'access_token');
    assert.equal(response.body.client_id, server.project.api_key_id);
    for (const name of [
      'sub',
      'aud',
      'iss',
      'exp',
      'iat',
      'jti',
      'sid',
      'scope',
      'client_user_id',
      'identifier',
    ])
      assert.deepEqual(response.body[name], claims[name], name);
    assert.equal(response.body.sub, userId);
    assert.equal(response.body.iss, server.url);
    assert.equal(response.body.role, 'admin');

    // JSON bodies are accepted too, and the hint is only a hint.
    const json = await server.request('POST', '/oauth/introspect', {
      body: { token: bundle.access_token, token_type_hint: 'refresh_token' },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(json.body.active, true);
    assert.equal(json.body.sub, userId);
  });

  test('custom claims named like answer members (active, token_type, …) never change the answer', async () => {
    const email = nextEmail();
    const signedIn = await server.signIn(email);
    const userId = decodeJwt(signedIn.access_token).sub!;
    const impostors = { active: false, token_type: 'refresh_token', client_id: 'pk_other', username: 'root' };

    // The integrator API refuses them (RFC 7662 members are reserved names).
    for (const [name, value] of Object.entries(impostors)) {
      const put = await server.request('PUT', `/v1/users/${userId}/claims`, {
        body: { claims: { role: 'admin', [name]: value } },
        headers: { authorization: basicAuth(server.project) },
      });
      assert.equal(put.status, 400, `${name}: ${put.text}`);
      assert.equal(put.body.code, 'reserved_claim');
    }

    // Stored by an older release, which accepted `active` and `token_type`: left out of new tokens.
    const project = (await server.ctx.projects.byApiKeyId(server.project.api_key_id))!;
    await claimsRepository.upsert(
      server.storage.db.kysely,
      project.id,
      userId,
      { role: 'admin', ...impostors },
      clock.t,
    );
    const bundle = await server.signIn(email);
    const minted = decodeJwt(bundle.access_token);
    assert.equal(minted.role, 'admin');
    for (const name of Object.keys(impostors)) assert.equal(minted[name], undefined, name);

    // A token that carries them (minted before the upgrade) is still answered by the service alone.
    const key = server.ctx.keys.signingKey();
    const legacy = signJwt(
      { alg: 'ES256', kid: key.kid, typ: 'at+jwt' },
      { ...minted, ...impostors, jti: 'legacy-token' },
      key.privateKey,
    );
    for (const token of [bundle.access_token, legacy]) {
      const response = await introspect(token);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.active, true);
      assert.equal(response.body.token_type, 'access_token');
      assert.equal(response.body.client_id, server.project.api_key_id);
      assert.equal(response.body.sub, userId);
      assert.equal(response.body.role, 'admin');
    }
  });

  test('an access token is inactive once expired (by the clock), revoked, or of another project', async () => {
    const bundle = await server.signIn(nextEmail());
    assert.equal((await introspect(bundle.access_token)).body.active, true);

    const saved = clock.t;
    try {
      clock.t += 3600_000 - 10_000;
      assert.equal((await introspect(bundle.access_token)).body.active, true);
      clock.t = saved + (3600 + server.config.clockLeeway) * 1000;
      assertInactive(await introspect(bundle.access_token));
    } finally {
      clock.t = saved;
    }
    assert.equal((await introspect(bundle.access_token)).body.active, true);

    // Another project's credentials learn nothing about this project's tokens.
    assertInactive(await introspect(bundle.access_token, basicAuth(projectB)));
    const inB = await server.signIn(nextEmail(), projectB);
    assertInactive(await introspect(inB.access_token));
    assert.equal((await introspect(inB.access_token, basicAuth(projectB))).body.active, true);

    // Revoked (RFC 7009 sign-out): inactive at once.
    const revoked = await server.request('POST', '/oauth/revoke', {
      body: { token: bundle.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(revoked.status, 200, revoked.text);
    assertInactive(await introspect(bundle.access_token));

    // The ID token is not an access token; garbage is inactive, not an error.
    const other = await server.signIn(nextEmail());
    assertInactive(await introspect(other.id_token));
    for (const junk of ['x', 'a.b.c', `${other.access_token.slice(0, -4)}AAAA`, 'tsr_x.y'])
      assertInactive(await introspect(junk));
  });

  test('a refresh token is active until rotated, revoked or expired', async () => {
    const bundle = await server.signIn(nextEmail());
    const sid = decodeJwt(bundle.access_token).sid;
    const active = await introspect(bundle.refresh_token);
    assert.equal(active.status, 200, active.text);
    assert.equal(active.body.active, true);
    assert.equal(active.body.token_type, 'refresh_token');
    assert.equal(active.body.client_id, server.project.api_key_id);
    assert.equal(active.body.sub, decodeJwt(bundle.access_token).sub);
    assert.equal(active.body.sid, sid);
    assert.equal(active.body.iss, server.url);
    assert.equal(active.body.exp, Math.floor((clock.t + 30 * 86_400_000) / 1000));
    assert.equal(active.body.iat, Math.floor(clock.t / 1000));
    assert.ok(!active.text.includes(bundle.refresh_token));

    // Another project's credentials: inactive.
    assertInactive(await introspect(bundle.refresh_token, basicAuth(projectB)));

    // Rotation: the old token is inactive, its successor active.
    const rotated = await refresh(bundle);
    assert.equal(rotated.status, 200, rotated.text);
    assertInactive(await introspect(bundle.refresh_token));
    const successor = await introspect(rotated.body.refresh_token);
    assert.equal(successor.body.active, true);
    assert.equal(successor.body.sid, sid);

    // A wrong secret for a real token id is inactive.
    const forged = `${rotated.body.refresh_token.slice(0, rotated.body.refresh_token.indexOf('.') + 1)}${'A'.repeat(43)}`;
    assertInactive(await introspect(forged));

    // Revocation ends it.
    const revoked = await server.request('POST', '/oauth/revoke', {
      body: { token: rotated.body.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(revoked.status, 200, revoked.text);
    assertInactive(await introspect(rotated.body.refresh_token));

    // Expiry by the injected clock: 30 days after the sign-in.
    const later = await server.signIn(nextEmail());
    const saved = clock.t;
    try {
      clock.t += 30 * 86_400_000 - 60_000;
      assert.equal((await introspect(later.refresh_token)).body.active, true);
      clock.t = saved + 30 * 86_400_000;
      assertInactive(await introspect(later.refresh_token));
    } finally {
      clock.t = saved;
    }
  });

  test('bad or missing client credentials are 401 invalid_client', async () => {
    const bundle = await server.signIn(nextEmail());
    const attempts = [
      null,
      'Basic',
      `Bearer ${bundle.access_token}`,
      basicAuth({ api_key_id: server.project.api_key_id, api_key_secret: 'sk_wrong' }),
      basicAuth({ api_key_id: server.project.api_key_id, api_key_secret: projectB.api_key_secret }),
      basicAuth({ api_key_id: 'pk_nobody', api_key_secret: server.project.api_key_secret }),
    ];
    for (const authorization of attempts) {
      const response = await introspect(bundle.access_token, authorization);
      assert.equal(response.status, 401, `${authorization}: ${response.text}`);
      assert.equal(response.body.error, 'invalid_client');
      assert.equal(typeof response.body.error_description, 'string');
      assert.match(response.headers.get('www-authenticate') ?? '', /^Basic /);
      assert.equal(response.body.active, undefined);
    }
    // The API key id alone (as apps send it) is not a credential here.
    const appStyle = await server.request('POST', '/oauth/introspect', {
      body: { token: bundle.access_token },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.equal(appStyle.status, 401);
    assert.equal(appStyle.body.error, 'invalid_client');
  });

  test('userinfo with a Bearer access token: sub, client_user_id, identifier, email or phone_number', async () => {
    const email = nextEmail();
    const bundle = await server.signIn(email);
    const userId = decodeJwt(bundle.access_token).sub!;
    const info = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(info.status, 200, info.text);
    assert.deepEqual(info.body, {
      sub: userId,
      client_user_id: userId,
      identifier: email,
      email,
      email_verified: true,
    });

    // client_user_id set by the integrator shows at once (userinfo reads the user, not the token).
    const patched = await server.request('PATCH', `/v1/users/${userId}`, {
      body: { client_user_id: 'crm-9' },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(patched.status, 200, patched.text);
    const again = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(again.body.client_user_id, 'crm-9');

    const phone = await server.signIn('+44 20 7946 0321');
    const phoneInfo = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${phone.access_token}` },
    });
    assert.equal(phoneInfo.status, 200, phoneInfo.text);
    assert.deepEqual(phoneInfo.body, {
      sub: decodeJwt(phone.access_token).sub,
      client_user_id: decodeJwt(phone.access_token).sub,
      identifier: '+442079460321',
      phone_number: '+442079460321',
      phone_number_verified: true,
    });
  });

  test('userinfo without a token, or with a bad, expired or revoked one: 401 with WWW-Authenticate', async () => {
    const bundle = await server.signIn(nextEmail());
    const missing = await server.request('GET', '/oauth/userinfo');
    assert.equal(missing.status, 401, missing.text);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer /);

    const refused = async (authorization: string) => {
      const response = await server.request('GET', '/oauth/userinfo', { headers: { authorization } });
      assert.equal(response.status, 401, `${authorization.slice(0, 20)}: ${response.text}`);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer /);
      return { response, challenge };
    };
    await refused(`Basic ${Buffer.from('a:b').toString('base64')}`);
    const garbage = await refused('Bearer not-a-token');
    assert.match(garbage.challenge, /error="invalid_token"/);
    assert.equal(garbage.response.body.error, 'invalid_token');
    assert.match((await refused(`Bearer ${bundle.id_token}`)).challenge, /error="invalid_token"/);

    const saved = clock.t;
    try {
      clock.t += (3600 + server.config.clockLeeway) * 1000;
      assert.match((await refused(`Bearer ${bundle.access_token}`)).challenge, /expired/);
    } finally {
      clock.t = saved;
    }

    await server.request('POST', '/oauth/revoke', {
      body: { token: bundle.access_token, client_id: server.project.api_key_id },
    });
    assert.match((await refused(`Bearer ${bundle.access_token}`)).challenge, /revoked/);
    assert.ok(!(await refused(`Bearer ${bundle.access_token}`)).response.text.includes(bundle.access_token));
  });
});
