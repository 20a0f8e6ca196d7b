import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AuthEvent, memoryStorage, type TesseraClient } from '@tessera/client';
import { type Setup, setup } from './helpers/setup.js';

/** The events a new listener receives, up to and including its first `initialSession`. */
function firstEvent(client: TesseraClient): Promise<AuthEvent> {
  return new Promise((resolve) => {
    const stop = client.onAuthStateChange((event) => {
      stop();
      resolve(event);
    });
  });
}

describe('initialSession, getUser and logout scopes', () => {
  let s: Setup;
  before(async () => {
    s = await setup({ env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
  });
  after(() => s.close());

  it('gives every listener an initialSession first: null when signed out, the stored session after a reload', async () => {
    const storage = memoryStorage();
    const client = s.client({ storage });
    assert.deepEqual(await firstEvent(client), { type: 'initialSession', claims: null });

    await s.signIn(client, 'initial@example.com');
    // A listener added later gets the state of now as its initialSession, not a replay of signedIn.
    const later = await firstEvent(client);
    assert.equal(later.type, 'initialSession');
    assert.equal(later.claims?.identifier, 'initial@example.com');

    // A new client over the same storage (a reload) finds the session without a network call.
    const calls = s.calls.length;
    const reloaded = s.client({ storage });
    const initial = await firstEvent(reloaded);
    assert.equal(initial.type, 'initialSession');
    assert.equal(initial.claims?.sub, (await client.getClaims())?.sub);
    assert.equal(s.calls.length, calls, 'no call to the service');
  });

  it('then passes on the changes, and nothing to a listener removed before its initialSession', async () => {
    const client = s.client();
    const seen: string[] = [];
    const removed: string[] = [];
    client.onAuthStateChange((event) => seen.push(event.type));
    client.onAuthStateChange((event) => removed.push(event.type))();
    await s.signIn(client, 'changes@example.com');
    await client.logout();
    assert.deepEqual(seen, ['initialSession', 'signedIn', 'signedOut']);
    assert.deepEqual(removed, []);
  });

  it('getUser() reads the userinfo endpoint; null when signed out', async () => {
    const client = s.client();
    assert.equal(await client.getUser(), null);
    await s.signIn(client, 'user@example.com');
    const claims = await client.getClaims();
    assert.deepEqual(await client.getUser(), {
      userId: claims?.sub,
      clientUserId: claims?.sub,
      identifier: 'user@example.com',
      identifierType: 'email',
      email: 'user@example.com',
    });
    assert.equal(s.count('/oauth/userinfo'), 1);
  });

  it("logout({ scope: 'others' }) ends the user's other sessions and keeps this one", async () => {
    const here = s.client();
    const there = s.client();
    await s.signIn(here, 'others@example.com');
    await s.signIn(there, 'others@example.com');
    assert.deepEqual(await here.logout({ scope: 'others' }), { revoked: true, sessionsRevoked: 1 });
    assert.equal(await here.isSignedIn(), true);
    assert.equal((await here.verify()).success, true);
    const answer = await there.verify();
    assert.equal(answer.success, false);
    assert.match(answer.reason ?? '', /revoked/);
  });

  it("logout({ scope: 'global' }) ends every session of the user and removes the tokens here", async () => {
    const storage = memoryStorage();
    const here = s.client({ storage });
    const there = s.client();
    await s.signIn(here, 'global@example.com');
    await s.signIn(there, 'global@example.com');
    const token = (await here.getAccessToken())!;
    assert.deepEqual(await here.logout({ scope: 'global' }), { revoked: true, sessionsRevoked: 2 });
    assert.equal(await here.isSignedIn(), false);
    assert.equal(await storage.get(`tessera.${s.server.project.api_key_id}.session`), null);
    assert.equal((await there.verify()).success, false);
    const verified = await s.server.request('POST', '/verify', {
      body: { oauth_token: { access_token: token } },
    });
    assert.equal(verified.body.success, false);
    // Signed out already: nothing to revoke, and no throw.
    assert.deepEqual(await here.logout({ scope: 'global' }), { revoked: false });
    assert.deepEqual(await here.logout({ scope: 'others' }), { revoked: false });
  });

  it('logout() keeps its meaning (this session only) and refuses an unknown scope', async () => {
    const here = s.client();
    const there = s.client();
    await s.signIn(here, 'local@example.com');
    await s.signIn(there, 'local@example.com');
    await assert.rejects(here.logout({ scope: 'everywhere' as 'global' }), TypeError);
    assert.deepEqual(await here.logout(), { revoked: true });
    assert.equal(await here.isSignedIn(), false);
    assert.equal((await there.verify()).success, true, 'the other session lives on');
  });
});
