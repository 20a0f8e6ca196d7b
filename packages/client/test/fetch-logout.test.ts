import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { type AuthEvent, type FetchLike, memoryStorage } from '@tessera/client';
import { codeOf, nextEvent, type Setup, setup } from './helpers/setup.js';

const API = 'http://api.test';

/** The integrator's API, faked: it refuses the tokens in `refused` (or all of them). */
function fakeApi(s: Setup) {
  const refused = new Set<string>();
  const seen: Array<{ token: string | undefined; body: string; custom: string | null }> = [];
  let refuseAll = false;
  const fetch: FetchLike = async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(API)) return s.fetch(input, init);
    const token = request.headers.get('authorization')?.replace(/^Bearer /, '');
    seen.push({ token, body: await request.text(), custom: request.headers.get('x-custom') });
    const ok = token !== undefined && !refuseAll && !refused.has(token);
    return new Response(ok ? 'hello' : 'no', { status: ok ? 200 : 401 });
  };
  return {
    fetch,
    refused,
    seen,
    refuseAll() {
      refuseAll = true;
    },
  };
}

describe('fetch wrapper', () => {
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('adds the Bearer token', async () => {
    s = await setup();
    const api = fakeApi(s);
    const client = s.client({ fetch: api.fetch });
    await s.signIn(client, 'fetch@example.com');
    const response = await client.fetch(`${API}/me`, { headers: { 'x-custom': 'kept' } });
    assert.equal(response.status, 200);
    assert.equal(api.seen[0]?.token, await client.getAccessToken());
    assert.equal(api.seen[0]?.custom, 'kept');
    assert.equal(s.count('/oauth/token'), 0);
  });

  it('after a 401 renews the token and retries once, body included', async () => {
    s = await setup();
    const api = fakeApi(s);
    const client = s.client({ fetch: api.fetch });
    await s.signIn(client, 'retry@example.com');
    const first = (await client.getAccessToken())!;
    api.refused.add(first);
    const response = await client.fetch(`${API}/orders`, { method: 'POST', body: '{"n":1}' });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'hello');
    assert.equal(api.seen.length, 2);
    assert.equal(api.seen[0]?.token, first);
    assert.notEqual(api.seen[1]?.token, first);
    assert.equal(api.seen[1]?.token, await client.getAccessToken());
    assert.deepEqual(
      api.seen.map((r) => r.body),
      ['{"n":1}', '{"n":1}'],
    );
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('retries only once: a second 401 is the answer', async () => {
    s = await setup();
    const api = fakeApi(s);
    const client = s.client({ fetch: api.fetch });
    await s.signIn(client, 'twice@example.com');
    api.refuseAll();
    const response = await client.fetch(new Request(`${API}/x`, { method: 'PUT', body: 'payload' }));
    assert.equal(response.status, 401);
    assert.equal(api.seen.length, 2);
    assert.equal(api.seen[1]?.body, 'payload');
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('fails with not_signed_in when signed out', async () => {
    s = await setup();
    const client = s.client();
    assert.equal(await codeOf(client.fetch(`${API}/x`)), 'not_signed_in');
    assert.equal(await codeOf(client.verify()), 'not_signed_in');
    assert.equal(await codeOf(client.devices.list()), 'not_signed_in');
  });
});

describe('logout', () => {
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('revokes the session (/verify then says revoked) and clears storage', async () => {
    s = await setup();
    const storage = memoryStorage();
    const client = s.client({ storage });
    await s.signIn(client, 'logout@example.com');
    const key = `tessera.${s.server.project.api_key_id}.session`;
    const { bundle } = JSON.parse((await storage.get(key))!);
    const signedOut = nextEvent<AuthEvent>(client.onAuthStateChange);

    assert.deepEqual(await client.logout(), { revoked: true });
    assert.equal((await signedOut).type, 'signedOut');
    assert.equal(await storage.get(key), null);
    assert.equal(await client.isSignedIn(), false);
    assert.equal(await client.getAccessToken(), null);

    const verified = await s.server.request('POST', '/verify', {
      body: { oauth_token: { access_token: bundle.access_token } },
      headers: { api_key_id: s.server.project.api_key_id },
    });
    assert.equal(verified.body.success, false);
    assert.equal(verified.body.reason, 'JWT token has been revoked');
    const refresh = await s.server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        refresh_token: bundle.refresh_token,
        client_id: s.server.project.api_key_id,
      },
    });
    assert.equal(refresh.body.error, 'invalid_grant');
  });

  it('clears storage even when the service cannot be reached, and says so', async () => {
    s = await setup();
    let offline = false;
    const base = s.fetch;
    const client = s.client({
      fetch: (input, init) => (offline ? Promise.reject(new TypeError('fetch failed')) : base(input, init)),
    });
    await s.signIn(client, 'offline-logout@example.com');
    offline = true;
    assert.deepEqual(await client.logout(), { revoked: false });
    assert.equal(await client.isSignedIn(), false);
  });

  it('keeps a registered trusted device', async () => {
    s = await setup();
    const client = s.client();
    await s.signIn(client, 'keepdevice@example.com');
    const device = await client.devices.register();
    await client.logout();
    assert.equal(await client.devices.currentId(), device.deviceId);
  });
});

describe('calls to the service as the user', () => {
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('renew and retry once when the service refuses a token that looked fresh', async () => {
    s = await setup();
    const storage = memoryStorage();
    await s.signIn(s.client({ storage }), 'refused@example.com');
    const key = `tessera.${s.server.project.api_key_id}.session`;
    const record = JSON.parse((await storage.get(key))!);
    const claims = JSON.parse(Buffer.from(record.bundle.access_token.split('.')[1], 'base64url').toString());
    // Same claims, a signature the service will refuse:
    record.bundle.access_token = `${record.bundle.access_token.split('.').slice(0, 2).join('.')}.AAAA`;
    await storage.set(key, JSON.stringify(record));

    const client = s.client({ storage });
    assert.deepEqual(await client.devices.list(), []);
    assert.equal(s.count('/oauth/token'), 1);
    assert.equal((await client.getClaims())?.sub, claims.sub);
    assert.equal((await client.verify()).success, true);
  });

  it('end signed out, not in a loop, when the session was revoked', async () => {
    s = await setup();
    const storage = memoryStorage();
    const client = s.client({ storage });
    await s.signIn(client, 'revoked-call@example.com');
    const key = `tessera.${s.server.project.api_key_id}.session`;
    const { bundle } = JSON.parse((await storage.get(key))!);
    await s.server.request('POST', '/oauth/revoke', {
      body: { token: bundle.refresh_token, client_id: s.server.project.api_key_id },
    });
    const signedOut = nextEvent<AuthEvent>(client.onAuthStateChange);
    assert.equal(await codeOf(client.devices.list()), 'not_signed_in');
    assert.equal((await signedOut).type, 'signedOut');
    assert.equal(s.count('/v1/devices'), 1);
    assert.equal(s.count('/oauth/token'), 1);
    assert.equal(await storage.get(key), null);
  });
});
