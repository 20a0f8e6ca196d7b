import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { eachDialect, startServer, type TestServer } from '../helpers/harness.js';

eachDialect('OTP sign-in to a verified token', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect);
  });
  after(() => server.close());

  test('the bundle verifies with jose against the JWKS and with /verify', async () => {
    const bundle = await server.signIn('Ada@Example.com');
    assert.equal(bundle.token_type, 'Bearer');
    assert.equal(bundle.auth_method, 'OTP');
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(bundle.access_token, jwks, {
      issuer: server.url,
      audience: server.project.api_key_id,
      typ: 'at+jwt',
      algorithms: ['ES256'],
    });
    assert.equal(protectedHeader.alg, 'ES256');
    assert.equal(payload.identifier, 'ada@example.com');
    const verified = await server.request('POST', '/verify', {
      body: { oauth_token: bundle },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.deepEqual(verified.body, { success: true });
  });
});
