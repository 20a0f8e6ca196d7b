import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type CredentialsLike,
  credentialsAuthenticator,
  memoryStorage,
  TesseraClientError,
} from '@tessera/client';
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

  it('report a dismissed prompt as passkey_not_available on a device that never used a passkey, else webauthn_cancelled', async () => {
    const notAllowed = async (): Promise<Credential | null> => {
      throw new DOMException('The operation either timed out or was not allowed.', 'NotAllowedError');
    };
    const dismissed: CredentialsLike = { create: notAllowed, get: notAllowed };
    const storage = memoryStorage();
    const client = s.client({ credentials: dismissed, storage });
    await s.signIn(client, 'dismiss@example.com');
    assert.equal(await codeOf(client.passkeys.register()), 'webauthn_cancelled');
    const error = await client.passkeys
      .signIn({ identifier: 'dismiss@example.com' })
      .catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'passkey_not_available');
    assert.match(error.detail, /probably none yet \(or the prompt was dismissed\)/);
    assert.ok(error.cause instanceof TesseraClientError && error.cause.code === 'webauthn_cancelled');

    // The same browser (same storage) once a passkey was created here: a dismissal is only that.
    const working = s.client({ credentials: fakeAuthenticator(), storage });
    await working.passkeys.register();
    assert.equal(await codeOf(client.passkeys.signIn()), 'webauthn_cancelled');
  });

  it('report a host the relying-party id does not cover as webauthn_origin_mismatch, with localhost for an IP', async () => {
    const insecure: CredentialsLike = {
      create: async () => {
        throw new DOMException('The relying party ID is not a registrable domain suffix', 'SecurityError');
      },
      get: async () => {
        throw new DOMException('This is an invalid domain.', 'SecurityError');
      },
    };
    const client = s.client({ credentials: insecure });
    await s.signIn(client, 'origin@example.com');
    const g = globalThis as unknown as { location?: URL };
    g.location = new URL('http://127.0.0.1:8080/demo/');
    try {
      const calls = s.calls.length;
      const error = await client.passkeys.signIn().catch((e: unknown) => e);
      assert.equal(s.calls.length, calls, 'known before any call: no challenge spent');
      assert.ok(error instanceof TesseraClientError);
      assert.equal(error.code, 'webauthn_origin_mismatch');
      assert.match(error.detail, /not an IP address \(127\.0\.0\.1\).*http:\/\/localhost:8080/);
      g.location = new URL('https://shop.example/');
      const other = await client.passkeys.register().catch((e: unknown) => e);
      assert.ok(other instanceof TesseraClientError);
      assert.equal(other.code, 'webauthn_origin_mismatch');
      assert.match(
        other.detail,
        /host \(shop\.example\) is neither the passkey relying-party id \(app\.test\)/,
      );
    } finally {
      delete g.location;
    }
  });

  it('sign in from the autofill (conditional mediation); a modal sign-in or the signal cancels it', async () => {
    const authenticator = fakeAuthenticator();
    const seen: CredentialRequestOptions[] = [];
    // A browser's conditional request waits until the user picks a passkey in the autofill, or
    // until it is aborted; `pick` plays the user.
    let pick = () => {};
    let reached = () => {};
    /** Resolves when the next request reaches the authenticator. */
    const nextRequest = () =>
      new Promise<void>((resolve) => {
        reached = resolve;
      });
    const credentials: CredentialsLike = {
      create: (options) => authenticator.create(options),
      get: (options) => {
        seen.push(options);
        reached();
        if (options.mediation !== 'conditional') return authenticator.get(options);
        return new Promise((resolve, reject) => {
          pick = () => resolve(authenticator.get(options));
          options.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        });
      },
    };
    const client = s.client({ credentials });
    await s.signIn(client, 'autofill@example.com');
    await client.passkeys.register();
    await client.logout();

    // Offered in the autofill, then the user picks it.
    let requested = nextRequest();
    const autofill = client.passkeys.signInWithAutofill();
    await requested;
    assert.equal(seen.at(-1)?.mediation, 'conditional');
    assert.deepEqual(seen.at(-1)?.publicKey?.allowCredentials ?? [], [], 'discoverable credentials only');
    pick();
    assert.equal((await autofill).authMethod, 'BIOMETRIC');
    assert.equal(await client.isSignedIn(), true);
    await client.logout();

    // A modal sign-in cancels the pending autofill request, then succeeds itself.
    const pending = client.passkeys.signInWithAutofill();
    const cancelled = codeOf(pending);
    const modal = await client.passkeys.signIn();
    assert.equal(await cancelled, 'webauthn_cancelled', 'not passkey_not_available: it was cancelled');
    assert.equal(modal.authMethod, 'BIOMETRIC');
    assert.equal(seen.at(-1)?.mediation, undefined, 'the modal request is not conditional');
    await client.logout();

    // The caller's signal cancels it too.
    const controller = new AbortController();
    requested = nextRequest();
    const aborted = codeOf(client.passkeys.signInWithAutofill({ signal: controller.signal }));
    await requested;
    assert.equal(seen.at(-1)?.mediation, 'conditional');
    controller.abort();
    assert.equal(await aborted, 'webauthn_cancelled');
    assert.equal(await client.isSignedIn(), false);
  });

  it('say whether the browser offers passkeys in autofill', async () => {
    const g = globalThis as { PublicKeyCredential?: unknown };
    assert.equal(
      await s.client().passkeys.browserSupportsAutofill(),
      false,
      'no PublicKeyCredential in Node',
    );
    g.PublicKeyCredential = { isConditionalMediationAvailable: async () => true };
    try {
      assert.equal(await s.client().passkeys.browserSupportsAutofill(), true);
      const jsonLevel = s.client({ authenticator: credentialsAuthenticator(fakeAuthenticator()) });
      assert.equal(
        await jsonLevel.passkeys.browserSupportsAutofill(),
        false,
        'not with a JSON-level authenticator',
      );
      g.PublicKeyCredential = {
        isConditionalMediationAvailable: async () => {
          throw new Error('broken');
        },
      };
      assert.equal(await s.client().passkeys.browserSupportsAutofill(), false);
    } finally {
      delete g.PublicKeyCredential;
    }
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
