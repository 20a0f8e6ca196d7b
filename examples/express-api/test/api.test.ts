import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, test } from 'node:test';
import { startServer, type TestServer } from '../../../packages/server/test/helpers/harness.js';
import { createApi } from '../src/api.js';

let tessera: TestServer;
let api: Server;
let base: string;

before(async () => {
  tessera = await startServer('sqlite');
  const app = createApi({
    issuer: tessera.url,
    apiKeyId: tessera.project.api_key_id,
    allowedOrigin: 'http://app.test',
    online: true,
  });
  api = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = api.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
after(async () => {
  api.close();
  await tessera.close();
});

test('a signed-in user reaches the protected route with the claims', async () => {
  const bundle = await tessera.signIn('backend@example.com');
  const response = await fetch(`${base}/api/me`, {
    headers: { authorization: `Bearer ${bundle.access_token}` },
  });
  assert.equal(response.status, 200);
  const body = (await response.json()) as { identifier: string; method: string };
  assert.equal(body.identifier, 'backend@example.com');
  assert.equal(body.method, 'OTP');
});

test('no token, a bad token and a revoked session are refused with RFC 6750 challenges', async () => {
  const none = await fetch(`${base}/api/me`);
  assert.equal(none.status, 401);
  assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm=/);

  const bad = await fetch(`${base}/api/me`, { headers: { authorization: 'Bearer not.a.token' } });
  assert.equal(bad.status, 401);
  assert.match(bad.headers.get('www-authenticate') ?? '', /error="invalid_token"/);

  const bundle = await tessera.signIn('revoked@example.com');
  const revoke = await tessera.request('POST', '/oauth/revoke', {
    body: { token: bundle.refresh_token, client_id: tessera.project.api_key_id },
  });
  assert.equal(revoke.status, 200);
  const revoked = await fetch(`${base}/api/me`, {
    headers: { authorization: `Bearer ${bundle.access_token}` },
  });
  assert.equal(revoked.status, 401);
});

test('CORS answers the demo origin only', async () => {
  const preflight = await fetch(`${base}/api/me`, {
    method: 'OPTIONS',
    headers: { origin: 'http://app.test' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://app.test');
  const other = await fetch(`${base}/api/me`, { method: 'OPTIONS', headers: { origin: 'http://evil.test' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
});
