import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type OAuthTokenBundle, VerifyReasons } from '@tessera/core';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  eachDialect,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60' };

const nextEmail = () => uniqueEmail('revoke');

const summary = (answer: TestResponse) => `${answer.status} ${answer.body?.error ?? ''}`;

eachDialect('POST /oauth/revoke (RFC 7009)', (dialect) => {
  let server: TestServer;
  let other: ProjectCredentials;
  before(async () => {
    server = await startServer(dialect, { env: ENV });
    other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
  });
  after(() => server.close());

  const revoke = (
    token: string,
    options: { clientId?: string; hint?: string; form?: boolean; header?: string } = {},
  ) => {
    const fields: Record<string, string> = { token };
    if (options.clientId !== '') fields.client_id = options.clientId ?? server.project.api_key_id;
    if (options.hint) fields.token_type_hint = options.hint;
    const headers: Record<string, string> = options.header ? { api_key_id: options.header } : {};
    if (options.form) {
      return server.request('POST', '/oauth/revoke', {
        raw: new URLSearchParams(fields).toString(),
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      });
    }
    return server.request('POST', '/oauth/revoke', { body: fields, headers });
  };
  const refresh = (token: string, clientId = server.project.api_key_id) =>
    server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: token, client_id: clientId },
    });
  const verify = (accessToken: string) =>
    server.request('POST', '/verify', { body: { oauth_token: { access_token: accessToken } } });

  function assertRevoked200(answer: TestResponse): void {
    assert.equal(answer.status, 200, summary(answer));
    assert.equal(answer.headers.get('cache-control'), 'no-store');
  }

  async function assertSessionEnded(bundle: OAuthTokenBundle, clientId = server.project.api_key_id) {
    const refreshed = await refresh(bundle.refresh_token, clientId);
    assert.equal(refreshed.status, 400, summary(refreshed));
    assert.equal(refreshed.body.error, 'invalid_grant');
    assert.deepEqual((await verify(bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
  }

  async function assertSessionAlive(bundle: OAuthTokenBundle, clientId = server.project.api_key_id) {
    assert.deepEqual((await verify(bundle.access_token)).body, { success: true });
    const refreshed = await refresh(bundle.refresh_token, clientId);
    assert.equal(refreshed.status, 200, summary(refreshed));
    return refreshed.body as OAuthTokenBundle;
  }

  test('revoking the refresh token ends the session', async () => {
    const bundle = await server.signIn(nextEmail());
    assert.deepEqual((await verify(bundle.access_token)).body, { success: true });
    assertRevoked200(await revoke(bundle.refresh_token, { hint: 'refresh_token' }));
    await assertSessionEnded(bundle);
  });

  test('revoking the access token ends the session, refresh token included', async () => {
    const bundle = await server.signIn(nextEmail());
    assertRevoked200(await revoke(bundle.access_token, { hint: 'access_token' }));
    await assertSessionEnded(bundle);
  });

  test('every token of the session dies, whichever is revoked (also after rotations)', async () => {
    const first = await server.signIn(nextEmail());
    const second = await assertSessionAlive(first);
    const third = await assertSessionAlive(second);
    // An already rotated refresh token still names its session.
    assertRevoked200(await revoke(first.refresh_token));
    for (const bundle of [second, third]) await assertSessionEnded(bundle);
    assert.deepEqual((await verify(first.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
  });

  test('a wrong token_type_hint does not stop the revocation; form bodies and the header work', async () => {
    const a = await server.signIn(nextEmail());
    assertRevoked200(await revoke(a.refresh_token, { hint: 'access_token', form: true }));
    await assertSessionEnded(a);
    const b = await server.signIn(nextEmail());
    assertRevoked200(
      await revoke(b.access_token, {
        hint: 'refresh_token',
        clientId: '',
        header: server.project.api_key_id,
      }),
    );
    await assertSessionEnded(b);
  });

  test('revoking twice is fine', async () => {
    const bundle = await server.signIn(nextEmail());
    assertRevoked200(await revoke(bundle.refresh_token));
    assertRevoked200(await revoke(bundle.refresh_token));
    assertRevoked200(await revoke(bundle.access_token));
    await assertSessionEnded(bundle);
  });

  test('unknown and garbage tokens are answered 200 and revoke nothing', async () => {
    const bundle = await server.signIn(nextEmail());
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ ...decodeJwt(bundle.access_token) })
      .setProtectedHeader({ alg: 'ES256', kid: 'nope', typ: 'at+jwt' })
      .sign(privateKey);
    const wrongSecret = `${bundle.refresh_token.slice(0, bundle.refresh_token.indexOf('.') + 1)}${'A'.repeat(43)}`;
    for (const token of [
      'garbage',
      '',
      'tsr_',
      'tsr_garbage',
      `tsr_${'A'.repeat(22)}.${'B'.repeat(43)}`,
      wrongSecret,
      forged,
      'a.b.c',
      bundle.id_token,
    ]) {
      const answer = await revoke(token);
      assert.equal(answer.status, 200, summary(answer));
    }
    await assertSessionAlive(bundle);
  });

  test('a token of another project is 400 unauthorized_client and nothing is revoked', async () => {
    const bundle = await server.signIn(nextEmail());
    for (const token of [bundle.refresh_token, bundle.access_token]) {
      for (const answer of [
        await revoke(token, { clientId: other.api_key_id }),
        await revoke(token, { clientId: '', header: other.api_key_id, form: true }),
      ]) {
        assert.equal(answer.status, 400, summary(answer));
        assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'error_description']);
        assert.equal(answer.body.error, 'unauthorized_client');
        assert.equal(answer.headers.get('cache-control'), 'no-store');
      }
    }
    const session = await server.storage.db.kysely
      .selectFrom('sessions')
      .select('revoked_at')
      .where('id', '=', decodeJwt(bundle.access_token).sid as string)
      .executeTakeFirstOrThrow();
    assert.equal(session.revoked_at, null);
    await assertSessionAlive(bundle);
  });

  test('the other project revokes its own tokens', async () => {
    const bundle = await server.signIn(nextEmail(), other);
    assertRevoked200(await revoke(bundle.refresh_token, { clientId: other.api_key_id }));
    await assertSessionEnded(bundle, other.api_key_id);
  });

  test('an unknown or missing client is 401 invalid_client and nothing is revoked', async () => {
    const bundle = await server.signIn(nextEmail());
    for (const answer of [
      await revoke(bundle.refresh_token, { clientId: 'pk_nobody' }),
      await revoke(bundle.access_token, { clientId: '' }),
    ]) {
      assert.equal(answer.status, 401, summary(answer));
      assert.equal(answer.body.error, 'invalid_client');
      assert.equal(typeof answer.body.error_description, 'string');
    }
    await assertSessionAlive(bundle);
  });

  test('a request without a token is invalid_request', async () => {
    const answer = await server.request('POST', '/oauth/revoke', {
      body: { client_id: server.project.api_key_id },
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error, 'invalid_request');
    assert.equal(answer.headers.get('cache-control'), 'no-store');
  });
});
