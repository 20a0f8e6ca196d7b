import type { PasskeyView } from '@tessera/core';
import { ClientErrorCodes, isTesseraClientError, TesseraClientError } from '../errors.js';
import { storageKeys } from '../session/record.js';
import type {
  AuthenticationResponseJSON,
  CreationOptionsJSON,
  PasskeyAuthenticator,
  PasskeyCeremonyOptions,
  RequestOptionsJSON,
} from '../webauthn/types.js';
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
  /** Cancels the ceremony (`webauthn_cancelled`). */
  signal?: AbortSignal;
}

/**
 * Options of {@link PasskeyMethods.signInWithAutofill}.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * void tessera.passkeys.signInWithAutofill({ signal: controller.signal });
 * ```
 */
export interface PasskeyAutofillOptions extends SignInOptions {
  /** Stops offering passkeys in the autofill (`webauthn_cancelled`). */
  signal?: AbortSignal;
}

/**
 * BIOMETRIC sign-in with WebAuthn passkeys (user verification required). Fails with
 * `webauthn_unavailable` where there is no WebAuthn, `webauthn_cancelled` when the user
 * dismisses the prompt, `passkey_not_available` when the prompt ends on a device that never used
 * a passkey for this project (most likely none exists yet) and `webauthn_origin_mismatch` when the
 * page's host does not fit the relying-party id (e.g. 127.0.0.1 instead of localhost). One
 * ceremony runs at a time: starting one cancels the one pending (a waiting autofill, say).
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
  /**
   * Whether this browser can offer passkeys in the autofill of an input (conditional mediation).
   * False with a JSON-level `authenticator` (React Native) and where WebAuthn is missing.
   */
  browserSupportsAutofill(): Promise<boolean>;
  /**
   * Offers the discoverable passkeys in the autofill of the page's inputs marked
   * `autocomplete="username webauthn"`, without a prompt; resolves once the user picks one and
   * is signed in. Call it when the sign-in form shows; a `signIn()` (the modal prompt) cancels
   * it, as does `signal` — it then rejects with `webauthn_cancelled`, which you can ignore. The
   * service's challenge expires (minutes): restart it when the form has been open that long.
   */
  signInWithAutofill(options?: PasskeyAutofillOptions): Promise<SignInResult>;
  list(): Promise<Passkey[]>;
  remove(passkeyId: string): Promise<void>;
}

/** Passes the caller's cancellation on to a ceremony's own controller. */
function follow(signal: AbortSignal | undefined, controller: AbortController): void {
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
}

export function passkeyMethods(
  ctx: ClientContext,
  authenticator: () => PasskeyAuthenticator,
  supportsAutofill: () => Promise<boolean>,
): PasskeyMethods {
  const usedKey = storageKeys(ctx.apiKeyId).passkeyUsed;
  let pending: AbortController | undefined;
  /** The options of a new ceremony; browsers run one at a time, so the pending one is cancelled. */
  const ceremony = (signal: AbortSignal | undefined, conditional = false): PasskeyCeremonyOptions => {
    pending?.abort();
    const controller = new AbortController();
    pending = controller;
    follow(signal, controller);
    return { signal: controller.signal, ...(conditional && { mediation: 'conditional' }) };
  };
  const remember = () => ctx.storage.set(usedKey, '1').catch(() => {});

  const signIn = async (options: PasskeySignInOptions, conditional: boolean): Promise<SignInResult> => {
    const device = authenticator();
    const started = await ctx.transport.call<{ challenge_id: string; options: RequestOptionsJSON }>(
      '/v1/auth/biometric/start',
      { body: options.identifier === undefined ? {} : { identifier: options.identifier } },
    );
    const run = ceremony(options.signal, conditional);
    let credential: AuthenticationResponseJSON;
    try {
      credential = await device.get(started.options, run);
    } catch (error) {
      throw await explainNoPasskey(error, conditional || run.signal?.aborted === true);
    }
    const result = await completeSignIn(
      ctx,
      '/v1/auth/biometric/complete',
      { challenge_id: started.challenge_id, credential },
      options,
    );
    await remember();
    return result;
  };

  /**
   * Browsers answer "dismissed" and "nothing to offer" alike (NotAllowedError, on purpose), and
   * the service names decoy credentials for users without passkeys, so neither side can tell.
   * What this device knows: whether it ever created or used a passkey for this project. When it
   * never did, "no passkey yet" is the likely story and the error says so, as a likelihood.
   */
  const explainNoPasskey = async (error: unknown, cancelled: boolean): Promise<unknown> => {
    if (cancelled || !isTesseraClientError(error, ClientErrorCodes.webauthnCancelled)) return error;
    if ((await ctx.storage.get(usedKey).catch(() => null)) !== null) return error;
    return new TesseraClientError(
      ClientErrorCodes.passkeyNotAvailable,
      'no passkey was used: this device has not used a passkey for this app before, so there is probably none yet (or the prompt was dismissed). Sign in another way, then add one with passkeys.register()',
      { cause: error },
    );
  };

  return {
    async register(name) {
      const device = authenticator();
      const started = await callAsUser<{ challenge_id: string; options: CreationOptionsJSON }>(
        ctx,
        '/v1/biometrics/register/start',
      );
      const credential = await device.create(started.options, ceremony(undefined));
      const view = await callAsUser<PasskeyView>(ctx, '/v1/biometrics/register/complete', {
        body: { challenge_id: started.challenge_id, credential, ...(name !== undefined && { name }) },
      });
      await remember();
      return toPasskey(view);
    },
    signIn: (options = {}) => signIn(options, false),
    browserSupportsAutofill: supportsAutofill,
    signInWithAutofill: (options = {}) => signIn(options, true),
    async list() {
      const answer = await callAsUser<{ passkeys: PasskeyView[] }>(ctx, '/v1/biometrics', { method: 'GET' });
      return answer.passkeys.map(toPasskey);
    },
    async remove(passkeyId) {
      await callAsUser(ctx, `/v1/biometrics/${encodeURIComponent(passkeyId)}`, { method: 'DELETE' });
    },
  };
}
