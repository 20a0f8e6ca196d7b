import type { PasskeyView } from '@tessera/core';
import type { CreationOptionsJSON, PasskeyAuthenticator, RequestOptionsJSON } from '../webauthn/types.js';
import {
  type ClientContext,
  callAsUser,
  completeSignIn,
  type SignInOptions,
  type SignInResult,
} from './context.js';

/**
 * A passkey of the signed-in user.
 *
 * @example
 * ```ts
 * const synced = (await tessera.passkeys.list()).filter((p: Passkey) => p.backedUp);
 * ```
 */
export interface Passkey {
  passkeyId: string;
  name: string;
  /** `singleDevice` or `multiDevice` (synced). */
  deviceType: string;
  backedUp: boolean;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601, or null when never used to sign in. */
  lastUsedAt: string | null;
}

const toPasskey = (p: PasskeyView): Passkey => ({
  passkeyId: p.passkey_id,
  name: p.name,
  deviceType: p.device_type,
  backedUp: p.backed_up,
  createdAt: p.created_at,
  lastUsedAt: p.last_used_at,
});

/**
 * Options of {@link PasskeyMethods.signIn}.
 *
 * @example
 * ```ts
 * await tessera.passkeys.signIn({ identifier: 'ada@example.com' });
 * ```
 */
export interface PasskeySignInOptions extends SignInOptions {
  /** Offer this user's passkeys; without it the platform offers every discoverable passkey. */
  identifier?: string;
}

/**
 * BIOMETRIC sign-in with WebAuthn passkeys (user verification required). Fails with
 * `webauthn_unavailable` where there is no WebAuthn and `webauthn_cancelled` when the user
 * dismisses the prompt.
 *
 * @example
 * ```ts
 * await tessera.passkeys.register('iCloud Keychain'); // while signed in
 * await tessera.passkeys.signIn();                     // later, on any device with the passkey
 * ```
 */
export interface PasskeyMethods {
  register(name?: string): Promise<Passkey>;
  signIn(options?: PasskeySignInOptions): Promise<SignInResult>;
  list(): Promise<Passkey[]>;
  remove(passkeyId: string): Promise<void>;
}

export function passkeyMethods(
  ctx: ClientContext,
  authenticator: () => PasskeyAuthenticator,
): PasskeyMethods {
  return {
    async register(name) {
      const device = authenticator();
      const started = await callAsUser<{ challenge_id: string; options: CreationOptionsJSON }>(
        ctx,
        '/v1/biometrics/register/start',
      );
      const credential = await device.create(started.options);
      const view = await callAsUser<PasskeyView>(ctx, '/v1/biometrics/register/complete', {
        body: { challenge_id: started.challenge_id, credential, ...(name !== undefined && { name }) },
      });
      return toPasskey(view);
    },
    async signIn(options = {}) {
      const device = authenticator();
      const started = await ctx.transport.call<{ challenge_id: string; options: RequestOptionsJSON }>(
        '/v1/auth/biometric/start',
        { body: options.identifier === undefined ? {} : { identifier: options.identifier } },
      );
      const credential = await device.get(started.options);
      return completeSignIn(
        ctx,
        '/v1/auth/biometric/complete',
        { challenge_id: started.challenge_id, credential },
        options,
      );
    },
    async list() {
      const answer = await callAsUser<{ passkeys: PasskeyView[] }>(ctx, '/v1/biometrics', { method: 'GET' });
      return answer.passkeys.map(toPasskey);
    },
    async remove(passkeyId) {
      await callAsUser(ctx, `/v1/biometrics/${encodeURIComponent(passkeyId)}`, { method: 'DELETE' });
    },
  };
}
