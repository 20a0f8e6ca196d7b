import {
  isTesseraClientError,
  type LogoutOptions,
  type LogoutResult,
  type OtpChallenge,
  type PasskeySignInOptions,
  type SignInOptions,
  type SignInResult,
  type TesseraClient,
  TesseraClientError,
} from '@tessera/client';
import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { useTesseraContext } from './provider.js';
import type { SessionState, TesseraUser } from './store.js';

/**
 * The session and a sign-out function. Renders `loading` first unless the server passed an
 * initial session, then follows sign-in, renewal and sign-out in every tab.
 *
 * @example
 * ```tsx
 * function Header() {
 *   const { status, user, signOut } = useSession();
 *   if (status === 'loading') return null;
 *   if (!user) return <a href="/signin">Sign in</a>;
 *   return (
 *     <>
 *       <button onClick={() => signOut()}>Sign out {user.identifier}</button>
 *       <button onClick={() => signOut('global')}>Sign out on every device</button>
 *     </>
 *   );
 * }
 * ```
 */
export function useSession(): SessionState & { signOut: SignOut } {
  const { client, store } = useTesseraContext('useSession');
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
  const signOut = useCallback<SignOut>(
    // `onClick={signOut}` hands over the click event: anything but a scope name means 'local'.
    (scope) => client.logout(typeof scope === 'string' ? { scope } : {}),
    [client],
  );
  return useMemo(() => ({ ...state, signOut }), [state, signOut]);
}

/**
 * `useSession().signOut`: `client.logout({ scope })`. `'local'` (default) ends this session in
 * every tab, `'global'` every session of the user on every device, `'others'` every session but
 * this one (this one stays signed in). Never throws; `revoked` says whether the service confirmed.
 *
 * @example
 * ```tsx
 * const { signOut } = useSession();
 * <button onClick={() => signOut('others')}>Sign out my other devices</button>
 * ```
 */
export type SignOut = (scope?: LogoutOptions['scope']) => Promise<LogoutResult>;

/**
 * Options of `useSignIn().passkey`: those of `passkeys.signIn()`, or `autofill: true` to offer the
 * passkeys in the autofill of inputs marked `autocomplete="username webauthn"` (conditional UI).
 *
 * @example
 * ```ts
 * const options: PasskeyOptions = { autofill: true };
 * ```
 */
export type PasskeyOptions = (PasskeySignInOptions & { autofill?: false }) | PasskeyAutofillOptions;

/**
 * `useSignIn().passkey({ autofill: true, signal? })`: passkeys offered in the autofill until the
 * user picks one, the component unmounts, `signal` aborts or a modal `passkey()` starts.
 *
 * @example
 * ```ts
 * const options: PasskeyAutofillOptions = { autofill: true, signal: AbortSignal.timeout(240_000) };
 * ```
 */
export interface PasskeyAutofillOptions extends SignInOptions {
  autofill: true;
  signal?: AbortSignal;
}

/**
 * The signed-in user, or null (also while loading).
 *
 * @example
 * ```tsx
 * const user = useUser();
 * return <p>{user ? `Hello ${user.identifier}` : 'Signed out'}</p>;
 * ```
 */
export function useUser(): TesseraUser | null {
  return useSession().user;
}

/**
 * Sign-in calls of the client with `pending` and the last `error` for the UI. Each call also
 * rejects with the error (a `TesseraClientError` with a stable `code`), so a form can react to it.
 *
 * @example
 * ```tsx
 * const { otp, pending, error } = useSignIn();
 * const [challenge, setChallenge] = useState<OtpChallenge | null>(null);
 * // step 1: setChallenge(await otp.start(email));  step 2: await otp.complete(challenge.challengeId, code);
 * ```
 */
export interface SignIn {
  otp: {
    start(identifier: string): Promise<OtpChallenge>;
    complete(challengeId: string, code: string, options?: SignInOptions): Promise<SignInResult>;
  };
  /** TRUSTED DEVICE sign-in with this browser's registered device key. */
  device(options?: SignInOptions): Promise<SignInResult>;
  /** PIN sign-in (device key plus PIN). */
  pin(pin: string, options?: SignInOptions): Promise<SignInResult>;
  /**
   * Passkey sign-in: the browser's passkey prompt, or with `{ autofill: true }` the passkeys
   * offered in the autofill of the identifier input (`autocomplete="username webauthn"`). An
   * autofill resolves null where the browser cannot offer one and when it ends without a sign-in
   * (unmount, `signal`, a modal `passkey()`); it does not set `pending` while it waits for the
   * user. Start it when the sign-in form shows:
   * `useEffect(() => void passkey({ autofill: true }), [passkey])`.
   */
  passkey(options?: PasskeySignInOptions & { autofill?: false }): Promise<SignInResult>;
  passkey(options: PasskeyAutofillOptions): Promise<SignInResult | null>;
  /** True while a call runs (not while an autofill waits for the user). */
  pending: boolean;
  /**
   * The last call's failure, cleared when the next one starts: the SDK's error, with a stable
   * `code` to switch on (`invalid_code`, `rate_limited`, `webauthn_cancelled`, …) and `retryAfter`
   * where the service gave one. A failure that is not the SDK's own (a bug) is given as
   * `internal_error` with the original as `cause`; the call itself rejects with the original.
   */
  error: TesseraClientError | null;
}

/**
 * The hook behind {@link SignIn}.
 *
 * @example
 * ```tsx
 * const { passkey, pending } = useSignIn();
 * <button disabled={pending} onClick={() => passkey()}>Sign in with a passkey</button>
 * ```
 */
export function useSignIn(): SignIn {
  const { client } = useTesseraContext('useSignIn');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<TesseraClientError | null>(null);
  const run = useMemo(() => tracked(setPending, setError), []);
  const [autofills] = useState(() => new Set<AbortController>());
  // Unmounting ends the autofills this component started (the browser keeps one pending otherwise).
  useEffect(
    () => () => {
      for (const controller of autofills) controller.abort();
      autofills.clear();
    },
    [autofills],
  );
  const methods = useMemo(() => signInMethods(client, run, autofills, setError), [client, run, autofills]);
  return { ...methods, pending, error };
}

/**
 * Runs a call with `pending` set while it runs and its failure kept as the SDK's error type; the
 * returned promise settles as the call's does.
 */
export function tracked(
  setPending: (pending: boolean) => void,
  setError: (error: TesseraClientError | null) => void,
): <T>(call: () => Promise<T>) => Promise<T> {
  return (call) => {
    setPending(true);
    setError(null);
    return call().then(
      (value) => {
        setPending(false);
        return value;
      },
      (failure: unknown) => {
        setPending(false);
        setError(asClientError(failure));
        throw failure;
      },
    );
  };
}

/** The SDK's error as it is; anything else (a bug) as `internal_error`, keeping it as `cause`. */
export function asClientError(failure: unknown): TesseraClientError {
  if (failure instanceof TesseraClientError) return failure;
  return new TesseraClientError('internal_error', 'The call failed unexpectedly (see the cause)', {
    cause: failure,
  });
}

/** The sign-in calls; `autofills` holds the controllers of pending autofills (aborted on unmount). */
export function signInMethods(
  client: Pick<TesseraClient, 'otp' | 'devices' | 'pin' | 'passkeys'>,
  run: <T>(call: () => Promise<T>) => Promise<T>,
  autofills: Set<AbortController>,
  setError: (error: TesseraClientError) => void,
): Omit<SignIn, 'pending' | 'error'> {
  const autofill = async (options: PasskeyAutofillOptions): Promise<SignInResult | null> => {
    const { autofill: _autofill, signal, ...signInOptions } = options;
    if (signal?.aborted || !(await client.passkeys.browserSupportsAutofill())) return null;
    const controller = new AbortController();
    signal?.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
    autofills.add(controller);
    try {
      return await client.passkeys.signInWithAutofill({ ...signInOptions, signal: controller.signal });
    } catch (failure) {
      if (isTesseraClientError(failure, 'webauthn_cancelled')) return null;
      setError(asClientError(failure));
      throw failure;
    } finally {
      autofills.delete(controller);
    }
  };
  const passkey = ((options: PasskeyOptions = {}) => {
    if (options.autofill === true) return autofill(options);
    const { autofill: _modal, ...signInOptions } = options;
    return run(() => client.passkeys.signIn(signInOptions));
  }) as SignIn['passkey'];
  return {
    otp: {
      start: (identifier) => run(() => client.otp.start(identifier)),
      complete: (challengeId, code, options) => run(() => client.otp.complete(challengeId, code, options)),
    },
    device: (options) => run(() => client.devices.signIn(options)),
    pin: (value, options) => run(() => client.pin.signIn(value, options)),
    passkey,
  };
}

/**
 * The `TesseraClient` given to `<TesseraProvider>`, for the calls the hooks do not wrap: passkey
 * and trusted-device registration, PINs, `getAccessToken()` for your API, `getUser()`, … Throws
 * outside a provider, like the other hooks.
 *
 * @example
 * ```tsx
 * function AddPasskey() {
 *   const client = useTesseraClient();
 *   return <button onClick={() => client.passkeys.register()}>Add a passkey</button>;
 * }
 * ```
 */
export function useTesseraClient(): TesseraClient {
  return useTesseraContext('useTesseraClient').client;
}
