import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { type AuthEvent, type FetchLike, memoryStorage, TesseraClientError } from '@tessera/client';
import { manualClock, nextEvent, recordEvents, type Setup, setup } from './helpers/setup.js';

const HOUR = 3600;

describe('renewal', () => {
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('renews within the margin before expiry, not earlier', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    const client = s.client();
    await s.signIn(client, 'renew@example.com');
    const first = await client.getAccessToken();
    const events = await recordEvents(client);

    clock.advance(HOUR - 120);
    assert.equal(await client.getAccessToken(), first, 'two minutes left: no renewal yet');
    assert.equal(s.count('/oauth/token'), 0);

    clock.advance(90);
    const renewed = await client.getAccessToken();
    assert.notEqual(renewed, first);
    assert.equal(s.count('/oauth/token'), 1);
    assert.deepEqual(events, ['refreshed']);
    assert.equal((await client.verify()).success, true);
    assert.equal(await client.getAccessToken(), renewed, 'the new token is used as it is');
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('caps the margin at half the lifetime of short-lived tokens', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now, env: { TESSERA_ACCESS_TOKEN_TTL: '30', TESSERA_ID_TOKEN_TTL: '30' } });
    const client = s.client();
    await s.signIn(client, 'short@example.com');
    const first = await client.getAccessToken();
    clock.advance(10);
    assert.equal(await client.getAccessToken(), first);
    clock.advance(6);
    assert.notEqual(await client.getAccessToken(), first);
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('renews the ID token when it is the one about to expire', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now, env: { TESSERA_ID_TOKEN_TTL: '600' } });
    const client = s.client();
    await s.signIn(client, 'idtoken@example.com');
    const idToken = await client.getIdToken();
    clock.advance(590);
    const access = await client.getAccessToken();
    assert.equal(s.count('/oauth/token'), 0, 'the access token alone does not need it');
    assert.notEqual(await client.getIdToken(), idToken);
    assert.notEqual(await client.getAccessToken(), access);
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('runs one refresh for ten parallel callers (single flight)', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    const client = s.client();
    await s.signIn(client, 'parallel@example.com');
    clock.advance(HOUR - 10);
    const tokens = await Promise.all(Array.from({ length: 10 }, () => client.getAccessToken()));
    assert.equal(new Set(tokens).size, 1);
    assert.equal(s.count('/oauth/token'), 1);
    assert.equal((await client.verify()).success, true);
  });

  it('corrects a device clock two hours ahead: no renewal storm', async () => {
    s = await setup();
    const client = s.client({ now: () => Date.now() + 2 * HOUR * 1000 });
    await s.signIn(client, 'ahead@example.com');
    for (let i = 0; i < 5; i++) await client.getAccessToken();
    assert.equal(s.count('/oauth/token'), 0);
  });

  it('corrects a device clock two hours behind: renews on time', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    const client = s.client({ now: () => clock.now() - 2 * HOUR * 1000 });
    await s.signIn(client, 'behind@example.com');
    const first = await client.getAccessToken();
    clock.advance(HOUR - 30);
    const renewed = await client.getAccessToken();
    assert.notEqual(renewed, first);
    assert.equal((await client.verify()).success, true);
  });

  it('learns the skew from the Date header of any answer', async () => {
    s = await setup();
    const storage = memoryStorage();
    // A session stored by a client whose clock was right (say, before the device clock changed):
    await s.signIn(s.client({ storage }), 'dateheader@example.com');
    const ahead = s.client({ storage, now: () => Date.now() + 2 * HOUR * 1000 });
    await ahead.otp.start('someone-else@example.com');
    await ahead.getAccessToken();
    assert.equal(s.count('/oauth/token'), 0, 'the Date header said the token is fresh');

    const unaware = s.client({ storage, now: () => Date.now() + 2 * HOUR * 1000 });
    await unaware.getAccessToken();
    assert.equal(s.count('/oauth/token'), 1, 'without any sample, its own clock says expired');
  });

  it('signs out, once, when the refresh token was revoked elsewhere', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    const storage = memoryStorage();
    const client = s.client({ storage });
    await s.signIn(client, 'revoked@example.com');
    const key = `tessera.${s.server.project.api_key_id}.session`;
    const refreshToken = JSON.parse((await storage.get(key))!).bundle.refresh_token;
    const revoked = await s.server.request('POST', '/oauth/revoke', {
      body: { token: refreshToken, client_id: s.server.project.api_key_id },
    });
    assert.equal(revoked.status, 200);

    const signedOut = nextEvent<AuthEvent>(client.onAuthStateChange);
    clock.advance(HOUR - 5);
    assert.equal(await client.getAccessToken(), null);
    assert.deepEqual(await signedOut, { type: 'signedOut', claims: null });
    assert.equal(await storage.get(key), null);
    assert.equal(await client.isSignedIn(), false);
    // No loop: later calls answer null without asking the service again.
    assert.equal(await client.getAccessToken(), null);
    assert.equal(await client.getIdToken(), null);
    assert.equal(await client.getClaims(), null);
    assert.equal(s.count('/oauth/token'), 1);
  });

  it('signs out when the refresh token has expired', async () => {
    const clock = manualClock();
    s = await setup({
      now: clock.now,
      env: { TESSERA_ACCESS_TOKEN_TTL: '30', TESSERA_REFRESH_TOKEN_TTL: '60' },
    });
    const client = s.client();
    await s.signIn(client, 'expired@example.com');
    const events = await recordEvents(client);
    clock.advance(90);
    assert.equal(await client.getAccessToken(), null);
    assert.deepEqual(events, ['signedOut']);
    assert.equal(await client.isSignedIn(), false);
  });

  it('surfaces network_error when the token has expired and the service is unreachable', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    let offline = false;
    const base = s.fetch;
    const fetch: FetchLike = (input, init) =>
      offline ? Promise.reject(new TypeError('fetch failed')) : base(input, init);
    const client = s.client({ fetch });
    await s.signIn(client, 'offline@example.com');
    const first = await client.getAccessToken();
    offline = true;

    clock.advance(HOUR - 30);
    assert.equal(await client.getAccessToken(), first, 'not expired yet: still usable while offline');

    clock.advance(60);
    const error = await client.getAccessToken().catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'network_error');
    assert.equal(await client.isSignedIn(), true, 'a network failure does not sign out');

    offline = false;
    const renewed = await client.getAccessToken();
    assert.ok(renewed && renewed !== first);
  });
});
