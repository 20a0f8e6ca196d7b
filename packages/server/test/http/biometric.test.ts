import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  eachDialect,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { type RegistrationOptions, SoftwareAuthenticator, TEST_RP_ID } from '../helpers/webauthn.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60' };

const nextEmail = () => uniqueEmail('passkey');

function assertProblem(response: TestResponse, status: number, code: string | RegExp): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  if (typeof code === 'string') assert.equal(response.body.code, code, response.text);
  else assert.match(response.body.code, code, response.text);
}

const bearer = (bundle: OAuthTokenBundle) => ({ authorization: `Bearer ${bundle.access_token}` });
const keyOf = (project: ProjectCredentials) => ({ api_key_id: project.api_key_id });

eachDialect('BIOMETRIC (WebAuthn passkeys)', (dialect) => {
  let server: TestServer;
  let other: ProjectCredentials;
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
    other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
  });
  after(() => server.close());

  const startRegistration = async (bundle: OAuthTokenBundle) => {
    const started = await server.request('POST', '/v1/biometrics/register/start', {
      headers: bearer(bundle),
    });
    assert.equal(started.status, 200, started.text);
    return started.body as { challenge_id: string; options: PublicKeyCredentialCreationOptionsJSON };
  };

  /** Registers a passkey of `authenticator` for the signed-in user; returns the raw answer. */
  const register = async (
    bundle: OAuthTokenBundle,
    authenticator: SoftwareAuthenticator,
    options: Omit<RegistrationOptions, 'challenge'> = {},
    name?: string,
  ) => {
    const { challenge_id, options: creation } = await startRegistration(bundle);
    const credential = authenticator.register({
      challenge: creation.challenge,
      userHandle: creation.user.id,
      ...options,
    });
    return server.request('POST', '/v1/biometrics/register/complete', {
      body: { challenge_id, credential, ...(name ? { name } : {}) },
      headers: bearer(bundle),
    });
  };

  /** A new user (by OTP) with one registered passkey. */
  const userWithPasskey = async (options: Omit<RegistrationOptions, 'challenge'> = {}) => {
    const email = nextEmail();
    const bundle = await server.signIn(email);
    const authenticator = new SoftwareAuthenticator();
    const registered = await register(bundle, authenticator, options);
    assert.equal(registered.status, 201, registered.text);
    return { email, bundle, authenticator, userId: decodeJwt(bundle.access_token).sub as string };
  };

  const startSignIn = async (identifier?: string, project = server.project) => {
    const started = await server.request('POST', '/v1/auth/biometric/start', {
      body: identifier === undefined ? {} : { identifier },
      headers: keyOf(project),
    });
    assert.equal(started.status, 200, started.text);
    return started.body as { challenge_id: string; options: PublicKeyCredentialRequestOptionsJSON };
  };

  const completeSignIn = (
    challengeId: string,
    credential: unknown,
    project = server.project,
    getOAuthToken = true,
  ) =>
    server.request('POST', '/v1/auth/biometric/complete', {
      body: { challenge_id: challengeId, credential, getOAuthToken },
      headers: keyOf(project),
    });

  const storedCounter = async (id: string) =>
    (
      await server.storage.db.kysely
        .selectFrom('passkeys')
        .select('counter')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).counter;

  describe('registration', () => {
    test('options name the project RP id and require user verification and a resident key', async () => {
      const bundle = await server.signIn(nextEmail());
      const { challenge_id, options } = await startRegistration(bundle);
      assert.match(challenge_id, /^ch_/);
      assert.equal(options.rp.id, TEST_RP_ID);
      assert.equal(options.authenticatorSelection?.userVerification, 'required');
      assert.equal(options.authenticatorSelection?.residentKey, 'required');
      assert.ok(
        options.pubKeyCredParams.some((p) => p.alg === -7),
        'ES256 is offered',
      );
      assert.equal(typeof options.challenge, 'string');
    });

    test("'none' attestation with UV → 201 and listed; a second registration excludes it", async () => {
      const bundle = await server.signIn(nextEmail());
      const authenticator = new SoftwareAuthenticator();
      const answer = await register(bundle, authenticator, { fmt: 'none' }, 'Laptop');
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.passkey_id, authenticator.id);
      assert.equal(answer.body.name, 'Laptop');
      assert.equal(answer.body.created_at, new Date(clock.t).toISOString());
      assert.equal(answer.body.last_used_at, null);
      assert.equal(typeof answer.body.backed_up, 'boolean');
      const listed = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.body.passkeys, [answer.body]);
      const { options } = await startRegistration(bundle);
      assert.deepEqual(
        options.excludeCredentials?.map((c) => c.id),
        [authenticator.id],
      );
    });

    test("'packed' self-attestation with UV → 201", async () => {
      const bundle = await server.signIn(nextEmail());
      const answer = await register(bundle, new SoftwareAuthenticator(), { fmt: 'packed' });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.name, 'Passkey');
    });

    test('without user verification → refused, nothing stored', async () => {
      const bundle = await server.signIn(nextEmail());
      for (const fmt of ['none', 'packed'] as const) {
        const answer = await register(bundle, new SoftwareAuthenticator(), { fmt, uv: false });
        assertProblem(answer, 400, /^(user_verification_required|passkey_verification_failed)$/);
      }
      const listed = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.deepEqual(listed.body.passkeys, []);
    });

    test('a wrong origin, a wrong RP id or a replayed challenge → refused', async () => {
      const bundle = await server.signIn(nextEmail());
      assertProblem(
        await register(bundle, new SoftwareAuthenticator(), { origin: 'https://evil.test' }),
        400,
        'passkey_verification_failed',
      );
      assertProblem(
        await register(bundle, new SoftwareAuthenticator(), { rpId: 'evil.test' }),
        400,
        'passkey_verification_failed',
      );
      const { challenge_id, options } = await startRegistration(bundle);
      const send = (authenticator: SoftwareAuthenticator) =>
        server.request('POST', '/v1/biometrics/register/complete', {
          body: {
            challenge_id,
            credential: authenticator.register({ challenge: options.challenge, userHandle: options.user.id }),
          },
          headers: bearer(bundle),
        });
      assert.equal((await send(new SoftwareAuthenticator())).status, 201);
      assertProblem(await send(new SoftwareAuthenticator()), 400, 'challenge_used');
    });

    test("another user's registration challenge → challenge_not_found", async () => {
      const alice = await server.signIn(nextEmail());
      const bob = await server.signIn(nextEmail());
      const { challenge_id, options } = await startRegistration(alice);
      const answer = await server.request('POST', '/v1/biometrics/register/complete', {
        body: {
          challenge_id,
          credential: new SoftwareAuthenticator().register({ challenge: options.challenge }),
        },
        headers: bearer(bob),
      });
      assertProblem(answer, 400, 'challenge_not_found');
    });

    test('registration needs a Bearer token', async () => {
      const answer = await server.request('POST', '/v1/biometrics/register/start');
      assertProblem(answer, 401, 'unauthorized');
      assert.match(answer.headers.get('www-authenticate') ?? '', /^Bearer/);
    });
  });

  describe('sign-in', () => {
    test('discoverable (no identifier): empty allowCredentials, then a bundle with auth_method BIOMETRIC', async () => {
      const { authenticator, userId, email } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      assert.deepEqual(options.allowCredentials ?? [], []);
      assert.equal(options.rpId, TEST_RP_ID);
      assert.equal(options.userVerification, 'required');
      const answer = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
      );
      assert.equal(answer.status, 200, answer.text);
      const bundle = answer.body.oauth_token as OAuthTokenBundle;
      assert.equal(bundle.auth_method, 'BIOMETRIC');
      assert.equal(bundle.token_type, 'Bearer');
      const claims = decodeJwt(bundle.access_token);
      assert.equal(claims.authentication_method, 'BIOMETRIC');
      assert.equal(claims.sub, userId);
      assert.equal(claims.identifier, email);
      assert.equal(claims.aud, server.project.api_key_id);
      const verified = await server.request('POST', '/verify', {
        body: { oauth_token: bundle },
        headers: keyOf(server.project),
      });
      assert.deepEqual(verified.body, { success: true });
      const session = await server.storage.db.kysely
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', claims.sid as string)
        .executeTakeFirstOrThrow();
      assert.equal(session.auth_method, 'BIOMETRIC');
      const listed = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.equal(listed.body.passkeys[0].last_used_at, new Date(clock.t).toISOString());
    });

    test('identifier-first: allowCredentials lists the user’s passkeys; an unknown identifier gets a stable decoy of the same shape', async () => {
      const { email, bundle, authenticator } = await userWithPasskey();
      const second = new SoftwareAuthenticator();
      assert.equal((await register(bundle, second, { fmt: 'packed' })).status, 201);
      const known = await startSignIn(email.toUpperCase());
      assert.deepEqual(
        known.options.allowCredentials?.map((c) => c.id).sort(),
        [authenticator.id, second.id].sort(),
      );
      const unknown = await startSignIn(nextEmail());
      assert.deepEqual(Object.keys(unknown).sort(), Object.keys(known).sort());
      assert.deepEqual(Object.keys(unknown.options).sort(), Object.keys(known.options).sort());
      // Regression (enumeration): an unknown identifier used to get [] and so told who has an account.
      const decoys = unknown.options.allowCredentials ?? [];
      assert.equal(decoys.length, 1);
      // 16, 20 or 32 bytes, as platform authenticators' ids are; listed with their transports.
      assert.match(decoys[0]!.id, /^(?:[A-Za-z0-9_-]{22}|[A-Za-z0-9_-]{27}|[A-Za-z0-9_-]{43})$/);
      assert.deepEqual(decoys[0]!.transports, ['hybrid', 'internal']);
      assert.deepEqual(
        Object.keys(decoys[0]!).sort(),
        Object.keys(known.options.allowCredentials![0]!).sort(),
      );
      const stranger = nextEmail();
      const first = await startSignIn(stranger);
      const again = await startSignIn(stranger.toUpperCase());
      assert.deepEqual(again.options.allowCredentials, first.options.allowCredentials);
      assert.notDeepEqual(first.options.allowCredentials, decoys);
      // A user with an account but no passkey looks the same as no account at all.
      const withoutPasskey = nextEmail();
      await server.signIn(withoutPasskey);
      const none = await startSignIn(withoutPasskey);
      assert.equal(none.options.allowCredentials?.length, 1);
      assert.equal(
        (
          await completeSignIn(
            none.challenge_id,
            authenticator.authenticate({ challenge: none.options.challenge }),
          )
        ).status,
        400,
      );
      for (const passkey of [authenticator, second]) {
        const { challenge_id, options } = await startSignIn(email);
        const answer = await completeSignIn(
          challenge_id,
          passkey.authenticate({ challenge: options.challenge }),
        );
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.body.oauth_token.auth_method, 'BIOMETRIC');
      }
    });

    // Regression (outside review): a stranger's own passkey against a challenge for an identifier
    // answered "belongs to another account" when the identifier had an account (passkey or not),
    // and signed the stranger in as themselves when it had none; the decoy sent back answered
    // passkey_not_found where a real passkey's id answered a verification failure.
    test('identifier-first: every refusal a stranger can cause is one answer, whoever the identifier is', async () => {
      const victim = await userWithPasskey();
      const noPasskey = nextEmail();
      await server.signIn(noPasskey);
      const attacker = await userWithPasskey();
      const answers: string[] = [];
      const record = (answer: TestResponse) => {
        assertProblem(answer, 400, 'passkey_verification_failed');
        assert.equal(answer.body.oauth_token, undefined);
        answers.push(answer.body.detail as string);
      };
      for (const identifier of [victim.email, noPasskey, nextEmail()]) {
        // The stranger's own passkey, with a genuine assertion.
        const own = await startSignIn(identifier);
        record(
          await completeSignIn(
            own.challenge_id,
            attacker.authenticator.authenticate({ challenge: own.options.challenge }),
          ),
        );
        // The credential the start offered, with a junk assertion.
        const offered = await startSignIn(identifier);
        const id = offered.options.allowCredentials![0]!.id;
        record(
          await completeSignIn(offered.challenge_id, {
            id,
            rawId: id,
            type: 'public-key',
            response: { clientDataJSON: 'e30', authenticatorData: 'AA', signature: 'AA' },
            clientExtensionResults: {},
          }),
        );
      }
      assert.equal(new Set(answers).size, 1, answers.join(' | '));
      // The owner still signs in.
      const { challenge_id, options } = await startSignIn(victim.email);
      const ok = await completeSignIn(
        challenge_id,
        victim.authenticator.authenticate({ challenge: options.challenge }),
      );
      assert.equal(ok.status, 200, ok.text);
    });

    test('identifier-first refuses a passkey of another account', async () => {
      const alice = await userWithPasskey();
      const bob = await userWithPasskey();
      const { challenge_id, options } = await startSignIn(alice.email);
      const answer = await completeSignIn(
        challenge_id,
        bob.authenticator.authenticate({ challenge: options.challenge }),
      );
      assertProblem(answer, 400, 'passkey_verification_failed');
    });

    test('getOAuthToken false → only user_id and auth_method', async () => {
      const { authenticator, userId } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const answer = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
        server.project,
        false,
      );
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { user_id: userId, auth_method: 'BIOMETRIC' });
    });

    test('an assertion without UV is refused; the failure is audited under the passkey owner (regression: discoverable sign-in recorded no user)', async () => {
      const { authenticator, userId } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const answer = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge, uv: false }),
      );
      assertProblem(answer, 400, 'user_verification_required');
      await server.ctx.audit.drain();
      const events = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select(['type', 'data'])
        .where('user_id', '=', userId)
        .where('type', '=', 'signin.failed')
        .execute();
      assert.deepEqual(
        events.map((e) => JSON.parse(e.data)),
        [{ method: 'BIOMETRIC', reason: 'user_not_verified' }],
      );
    });

    test('a counter not greater than the stored one is refused', async () => {
      const { authenticator } = await userWithPasskey({ counter: 10 });
      assert.equal(await storedCounter(authenticator.id), 10);
      const attempt = async (value: number) => {
        const { challenge_id, options } = await startSignIn();
        return completeSignIn(
          challenge_id,
          authenticator.authenticate({ challenge: options.challenge, counter: value }),
        );
      };
      assertProblem(await attempt(10), 400, 'passkey_verification_failed');
      assertProblem(await attempt(3), 400, 'passkey_verification_failed');
      assert.equal((await attempt(11)).status, 200);
      assert.equal(await storedCounter(authenticator.id), 11);
      assertProblem(await attempt(11), 400, 'passkey_verification_failed');
      assert.equal((await attempt(12)).status, 200);
    });

    test('a forged assertion tells nothing of the stored counter', async () => {
      // A stranger who knows a credential id (biometric/start hands it out) signs with a key of
      // their own: whatever counter they claim, the answer is the same, and the owner's stored
      // counter (10) shows neither in the detail nor in which claims were refused differently.
      const { authenticator } = await userWithPasskey({ counter: 10 });
      const forger = new SoftwareAuthenticator();
      const forge = async (counter: number) => {
        const { challenge_id, options } = await startSignIn();
        const forged = forger.authenticate({ challenge: options.challenge, counter });
        forged.id = forged.rawId = authenticator.id;
        return completeSignIn(challenge_id, forged);
      };
      const answers = [await forge(3), await forge(10), await forge(11)];
      for (const answer of answers) {
        assertProblem(answer, 400, 'passkey_verification_failed');
        assert.doesNotMatch(answer.body.detail, /\d/, answer.text);
      }
      assert.equal(new Set(answers.map((a) => a.body.detail)).size, 1, answers.map((a) => a.text).join('\n'));
      assert.equal(await storedCounter(authenticator.id), 10);
    });

    test('a wrong origin or RP id is refused, without quoting the origin or the allowed ones', async () => {
      const { authenticator } = await userWithPasskey();
      for (const [override, reason] of [
        [{ origin: 'https://evil.test' }, /origin the project does not allow/],
        [{ origin: 'http://other.test<script>' }, /origin the project does not allow/],
        [{ rpId: 'evil.test' }, /another relying party/],
      ] as const) {
        const { challenge_id, options } = await startSignIn();
        const answer = await completeSignIn(
          challenge_id,
          authenticator.authenticate({ challenge: options.challenge, ...override }),
        );
        assertProblem(answer, 400, 'passkey_verification_failed');
        assert.match(answer.body.detail, reason);
        assert.doesNotMatch(answer.body.detail, /evil|other\.test|app\.test|script/, answer.text);
      }
    });

    test('an assertion over another challenge is refused', async () => {
      const { authenticator } = await userWithPasskey();
      const first = await startSignIn();
      const second = await startSignIn();
      const answer = await completeSignIn(
        second.challenge_id,
        authenticator.authenticate({ challenge: first.options.challenge }),
      );
      assertProblem(answer, 400, 'passkey_verification_failed');
    });

    test('a replayed challenge → challenge_used', async () => {
      const { authenticator } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const assertion = authenticator.authenticate({ challenge: options.challenge });
      assert.equal((await completeSignIn(challenge_id, assertion)).status, 200);
      assertProblem(await completeSignIn(challenge_id, assertion), 400, 'challenge_used');
      const fresh = authenticator.authenticate({ challenge: options.challenge });
      assertProblem(await completeSignIn(challenge_id, fresh), 400, 'challenge_used');
    });

    test('an expired challenge → challenge_expired', async () => {
      const { authenticator } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      clock.t += 301_000;
      const answer = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
      );
      assertProblem(answer, 400, 'challenge_expired');
    });

    test("another project's challenge → challenge_not_found", async () => {
      const { authenticator } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const answer = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
        other,
      );
      assertProblem(answer, 400, 'challenge_not_found');
      // The other project cannot use this project's passkey with a challenge of its own either.
      const own = await startSignIn(undefined, other);
      assertProblem(
        await completeSignIn(
          own.challenge_id,
          authenticator.authenticate({ challenge: own.options.challenge }),
          other,
        ),
        400,
        /^(passkey_not_found|passkey_verification_failed)$/,
      );
    });

    test('regression: native Android passkeys, whose origin is android:apk-key-hash:…, can be allowed', async () => {
      const android = `android:apk-key-hash:${createHash('sha256').update('app signing certificate').digest('base64url')}`;
      // The Android origin first: the RP id still defaults to the host of the web origin.
      const native = await server.ctx.projects.create({
        name: 'native',
        origins: [android, 'https://example.test'],
      });
      const row = await server.storage.db.kysely
        .selectFrom('projects')
        .select(['origins', 'rp_id'])
        .where('id', '=', native.project_id)
        .executeTakeFirstOrThrow();
      assert.equal(row.rp_id, 'example.test');
      assert.deepEqual(JSON.parse(row.origins), [android, 'https://example.test']);

      const bundle = await server.signIn(nextEmail(), native);
      const phone = new SoftwareAuthenticator('example.test');
      const { challenge_id, options: creation } = await (async () => {
        const started = await server.request('POST', '/v1/biometrics/register/start', {
          headers: bearer(bundle),
        });
        assert.equal(started.status, 200, started.text);
        return started.body;
      })();
      assert.equal(creation.rp.id, 'example.test');
      const registered = await server.request('POST', '/v1/biometrics/register/complete', {
        body: {
          challenge_id,
          credential: phone.register({
            challenge: creation.challenge,
            userHandle: creation.user.id,
            origin: android,
          }),
        },
        headers: bearer(bundle),
      });
      assert.equal(registered.status, 201, registered.text);
      const started = await startSignIn(undefined, native);
      const answer = await completeSignIn(
        started.challenge_id,
        phone.authenticate({ challenge: started.options.challenge, origin: android }),
        native,
      );
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.oauth_token.auth_method, 'BIOMETRIC');
      // The test project does not list that Android app.
      await assert.rejects(
        server.ctx.projects.create({ name: 'bad', origins: ['android:apk-key-hash:short'] }),
      );
    });

    test('an unknown credential → passkey_not_found', async () => {
      const { challenge_id, options } = await startSignIn();
      const stranger = new SoftwareAuthenticator();
      const answer = await completeSignIn(
        challenge_id,
        stranger.authenticate({ challenge: options.challenge }),
      );
      assertProblem(answer, 400, 'passkey_not_found');
    });
  });

  describe('abuse resistance', () => {
    test('regression: removing a passkey ends the sessions it started (they stayed alive for 30 days)', async () => {
      const { authenticator, bundle } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const signedIn = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
      );
      assert.equal(signedIn.status, 200, signedIn.text);
      const passkeyBundle = signedIn.body.oauth_token as OAuthTokenBundle;
      const removed = await server.request('DELETE', `/v1/biometrics/${authenticator.id}`, {
        headers: bearer(bundle),
      });
      assert.equal(removed.status, 204, removed.text);
      const verified = await server.request('POST', '/verify', {
        body: { oauth_token: { access_token: passkeyBundle.access_token } },
        headers: keyOf(server.project),
      });
      assert.deepEqual(verified.body, { success: false, reason: 'JWT token has been revoked' });
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: passkeyBundle.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 400, refreshed.text);
      assert.equal(refreshed.body.error, 'invalid_grant');
      // The OTP session that removed it is not the passkey's and goes on.
      const own = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.equal(own.status, 200, own.text);
    });

    test('regression: junk assertions naming a victim’s credential id do not lock the genuine passkey out', async () => {
      const { authenticator, userId } = await userWithPasskey();
      // Twice the failure budget of junk: a signature made by another key over the victim's credential id.
      const forger = new SoftwareAuthenticator();
      for (let i = 0; i < 2 * 10 + 1; i++) {
        const { challenge_id, options } = await startSignIn();
        const junk = {
          ...forger.authenticate({ challenge: options.challenge }),
          id: authenticator.id,
          rawId: authenticator.id,
        };
        const answer = await completeSignIn(challenge_id, junk);
        assertProblem(answer, 400, 'passkey_verification_failed');
      }
      const { challenge_id, options } = await startSignIn();
      const genuine = await completeSignIn(
        challenge_id,
        authenticator.authenticate({ challenge: options.challenge }),
      );
      assert.equal(genuine.status, 200, genuine.text);
      await server.ctx.audit.drain();
      const failures = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select('data')
        .where('user_id', '=', userId)
        .where('type', '=', 'signin.failed')
        .execute();
      assert.ok(failures.length >= 21);
      for (const f of failures) assert.equal(JSON.parse(f.data).reason, 'verification_failed');
    });

    test('regression: a forged signature is passkey_verification_failed, not user_verification_required', async () => {
      const { authenticator } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      const real = authenticator.authenticate({ challenge: options.challenge });
      const signature = Buffer.from(real.response.signature, 'base64url');
      const last = signature.length - 1;
      signature.writeUInt8(signature.readUInt8(last) ^ 0x01, last);
      const forged = { ...real, response: { ...real.response, signature: signature.toString('base64url') } };
      assertProblem(await completeSignIn(challenge_id, forged), 400, 'passkey_verification_failed');
    });
  });

  describe('management', () => {
    test('several passkeys per user; list and remove; a removed passkey cannot sign in', async () => {
      const bundle = await server.signIn(nextEmail());
      const phone = new SoftwareAuthenticator();
      const laptop = new SoftwareAuthenticator();
      assert.equal((await register(bundle, phone, {}, 'Phone')).status, 201);
      assert.equal((await register(bundle, laptop, { fmt: 'packed' }, 'Laptop')).status, 201);
      const listed = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.deepEqual(
        listed.body.passkeys.map((p: { passkey_id: string; name: string }) => [p.passkey_id, p.name]).sort(),
        [
          [phone.id, 'Phone'],
          [laptop.id, 'Laptop'],
        ].sort(),
      );

      // Someone else cannot remove them.
      const stranger = await server.signIn(nextEmail());
      const foreign = await server.request('DELETE', `/v1/biometrics/${phone.id}`, {
        headers: bearer(stranger),
      });
      assertProblem(foreign, 404, 'passkey_not_found');

      const removed = await server.request('DELETE', `/v1/biometrics/${phone.id}`, {
        headers: bearer(bundle),
      });
      assert.equal(removed.status, 204, removed.text);
      const again = await server.request('DELETE', `/v1/biometrics/${phone.id}`, { headers: bearer(bundle) });
      assertProblem(again, 404, 'passkey_not_found');
      const after = await server.request('GET', '/v1/biometrics', { headers: bearer(bundle) });
      assert.deepEqual(
        after.body.passkeys.map((p: { passkey_id: string }) => p.passkey_id),
        [laptop.id],
      );

      const first = await startSignIn();
      assertProblem(
        await completeSignIn(first.challenge_id, phone.authenticate({ challenge: first.options.challenge })),
        400,
        'passkey_not_found',
      );
      const second = await startSignIn();
      const ok = await completeSignIn(
        second.challenge_id,
        laptop.authenticate({ challenge: second.options.challenge }),
      );
      assert.equal(ok.status, 200, ok.text);
    });

    test('the events are in the audit log', async () => {
      const { authenticator, userId, bundle } = await userWithPasskey();
      const { challenge_id, options } = await startSignIn();
      assert.equal(
        (await completeSignIn(challenge_id, authenticator.authenticate({ challenge: options.challenge })))
          .status,
        200,
      );
      await server.request('DELETE', `/v1/biometrics/${authenticator.id}`, { headers: bearer(bundle) });
      const events = await server.storage.db.kysely
        .selectFrom('audit_events')
        .select(['type', 'data'])
        .where('user_id', '=', userId)
        .where('type', 'in', ['passkey.added', 'passkey.removed', 'signin.succeeded'])
        .execute();
      const seen = events
        .map((e) => ({ type: e.type, data: JSON.parse(e.data) }))
        .filter((e) => e.data.method !== 'OTP')
        .sort((a, b) => a.type.localeCompare(b.type));
      assert.deepEqual(seen, [
        { type: 'passkey.added', data: { passkey_id: authenticator.id } },
        { type: 'passkey.removed', data: { passkey_id: authenticator.id, sessions_revoked: 1 } },
        { type: 'signin.succeeded', data: { method: 'BIOMETRIC', passkey_id: authenticator.id } },
      ]);
    });
  });
});
