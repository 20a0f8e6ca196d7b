import type {
  OtpChallenge,
  PasskeySignInOptions,
  SignInOptions,
  SignInResult,
  TesseraClient,
} from '@tessera/client';
import { useCallback, useMemo, useState, useSyncExternalStore } from 'react';
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
 *   return user ? <button onClick={signOut}>Sign out {user.identifier}</button> : <a href="/signin">Sign in</a>;
 * }
 * ```
 */
export function useSession(): SessionState & { signOut: () => Promise<{ revoked: boolean }> } {
  const { client, store } = useTesseraContext('useSession');
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
  const signOut = useCallback(() => client.logout(), [client]);
  return useMemo(() => ({ ...state, signOut }), [state, signOut]);
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
  /** Passkey sign-in (the browser's passkey prompt). */
  passkey(options?: PasskeySignInOptions): Promise<SignInResult>;
  /** True while a call runs. */
  pending: boolean;
  /** The last call's failure, cleared when the next one starts. */
  error: unknown;
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
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(<T>(call: () => Promise<T>): Promise<T> => {
    setPending(true);
    setError(null);
    return call().then(
      (value) => {
        setPending(false);
        return value;
      },
      (failure: unknown) => {
        setPending(false);
        setError(failure);
        throw failure;
      },
    );
  }, []);
  const methods = useMemo(() => signInMethods(client, run), [client, run]);
  return { ...methods, pending, error };
}

function signInMethods(
  client: Pick<TesseraClient, 'otp' | 'devices' | 'pin' | 'passkeys'>,
  run: <T>(call: () => Promise<T>) => Promise<T>,
): Omit<SignIn, 'pending' | 'error'> {
  return {
    otp: {
      start: (identifier) => run(() => client.otp.start(identifier)),
      complete: (challengeId, code, options) => run(() => client.otp.complete(challengeId, code, options)),
    },
    device: (options) => run(() => client.devices.signIn(options)),
    pin: (value, options) => run(() => client.pin.signIn(value, options)),
    passkey: (options) => run(() => client.passkeys.signIn(options)),
  };
}
