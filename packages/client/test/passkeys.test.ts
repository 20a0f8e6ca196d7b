import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CredentialsLike, TesseraClientError } from '@tessera/client';
import { fakeAuthenticator } from './helpers/fake-authenticator.js';
import { codeOf, type Setup, setup } from './helpers/setup.js';

describe('passkeys', () => {
  let s: Setup;
  before(async () => {
    // The removal test signs the same user in twice by OTP.
    s = await setup({ env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
  });
  after(() => s.close());

  it('fail with webauthn_unavailable where there is no WebAuthn, before any call', async () => {
    const client = s.client();
    await s.signIn(client, 'nowebauthn@example.com');
    const before = s.calls.length;
    const error = await client.passkeys.signIn().catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'webauthn_unavailable');
    assert.equal(await codeOf(client.passkeys.register()), 'webauthn_unavailable');
    assert.equal(s.calls.length, before, 'no challenge was spent');
  });

  it('register, list, sign in (with and without identifier) and remove, through navigator.credentials', async () => {
    const credentials = fakeAuthenticator();
    const client = s.client({ credentials });
    await s.signIn(client, 'passkey@example.com');
    const passkey = await client.passkeys.register('Test key');
    assert.equal(passkey.name, 'Test key');
    assert.equal(passkey.passkeyId, (await client.passkeys.list())[0]?.passkeyId);
    await client.logout();

    const named = await client.passkeys.signIn({ identifier: 'passkey@example.com' });
    assert.equal(named.authMethod, 'BIOMETRIC');
    assert.equal(named.tokensStored, true);
    assert.equal((await client.getClaims())?.authentication_method, 'BIOMETRIC');
    assert.equal((await client.verify()).success, true);
    await client.logout();

    const discoverable = await client.passkeys.signIn({ getOAuthToken: false });
    assert.equal(discoverable.userId, named.userId);
    assert.equal(discoverable.tokensStored, false);
    assert.equal(await client.isSignedIn(), false);

    await client.passkeys.signIn();
    await client.passkeys.remove(passkey.passkeyId);
    // The session this passkey started ended with it: the client is signed out.
    await assert.rejects(client.passkeys.list());
    await s.signIn(client, 'passkey@example.com');
    assert.deepEqual(await client.passkeys.list(), []);
    assert.equal(await codeOf(client.passkeys.signIn()), 'passkey_not_found');
  });

  it('report a dismissed prompt as webauthn_cancelled', async () => {
    const dismissed: CredentialsLike = {
      create: async () => {
        throw new DOMException('The operation either timed out or was not allowed.', 'NotAllowedError');
      },
      get: async () => {
        throw new DOMException('The operation either timed out or was not allowed.', 'NotAllowedError');
      },
    };
    const client = s.client({ credentials: dismissed });
    await s.signIn(client, 'dismiss@example.com');
    assert.equal(await codeOf(client.passkeys.register()), 'webauthn_cancelled');
    assert.equal(await codeOf(client.passkeys.signIn()), 'webauthn_cancelled');
  });

  it('surface the service refusing an assertion without user verification', async () => {
    const credentials = fakeAuthenticator();
    const client = s.client({ credentials });
    await s.signIn(client, 'nouv@example.com');
    await client.passkeys.register();
    await client.logout();
    credentials.skipUserVerification = true;
    assert.equal(await codeOf(client.passkeys.signIn()), 'user_verification_required');
  });

  it('use a JSON-level authenticator (React Native libraries) when one is given', async () => {
    const browserLike = fakeAuthenticator();
    const { credentialsAuthenticator } = await import('@tessera/client');
    const inner = credentialsAuthenticator(browserLike);
    const seen: string[] = [];
    const client = s.client({
      authenticator: {
        create: (options) => {
          seen.push(typeof options.challenge);
          return inner.create(options);
        },
        get: (options) => {
          seen.push(typeof options.challenge);
          return inner.get(options);
        },
      },
    });
    await s.signIn(client, 'json@example.com');
    await client.passkeys.register();
    await client.logout();
    await client.passkeys.signIn();
    assert.deepEqual(seen, ['string', 'string'], 'the options stay JSON (base64url strings)');
    assert.equal(await client.isSignedIn(), true);
  });
});
