import type { AccessTokenClaims, AuthListener, TesseraClient } from '@tessera/client';

/**
 * Who is signed in, as the UI needs it. Shaped like `@tessera/ssr`'s `SessionUser`, so a server
 * can pass what it read from its cookies as the initial session.
 *
 * @example
 * ```ts
 * const user: TesseraUser = { id: 'usr_1', clientUserId: 'usr_1', identifier: 'ada@example.com', authMethod: 'OTP' };
 * ```
 */
export interface TesseraUser {
  id: string;
  clientUserId: string;
  identifier: string;
  authMethod: AccessTokenClaims['authentication_method'];
}

/**
 * What the server knows of the session when it renders: `{ user }`, `null` for signed out, or
 * `undefined` (not known: the tokens live in the browser) — then both sides render `loading` first.
 *
 * @example
 * ```ts
 * const initialSession: InitialSession = session ? { user: session.user } : null;
 * ```
 */
export type InitialSession = { user: TesseraUser } | null | undefined;

/**
 * The session state `useSession()` returns. `claims` are decoded, not verified: for display only.
 *
 * @example
 * ```ts
 * const state: SessionState = { status: 'signedOut', user: null, claims: null };
 * ```
 */
export type SessionState =
  | { status: 'loading'; user: null; claims: null }
  | { status: 'signedIn'; user: TesseraUser; claims: AccessTokenClaims | null }
  | { status: 'signedOut'; user: null; claims: null };

/** The slice of `TesseraClient` the bindings use (tests pass a look-alike). */
export type SessionClient = Pick<
  TesseraClient,
  'onAuthStateChange' | 'logout' | 'otp' | 'devices' | 'pin' | 'passkeys'
>;

const LOADING: SessionState = { status: 'loading', user: null, claims: null };
const SIGNED_OUT: SessionState = { status: 'signedOut', user: null, claims: null };

export function userOf(claims: AccessTokenClaims): TesseraUser {
  return {
    id: claims.sub,
    clientUserId: claims.client_user_id,
    identifier: claims.identifier,
    authMethod: claims.authentication_method,
  };
}

function stateOf(claims: AccessTokenClaims | null): SessionState {
  return claims ? { status: 'signedIn', user: userOf(claims), claims } : SIGNED_OUT;
}

function initialState(initial: InitialSession): SessionState {
  if (initial === undefined) return LOADING;
  if (initial === null) return SIGNED_OUT;
  return { status: 'signedIn', user: { ...initial.user }, claims: null };
}

/**
 * An external store for `useSyncExternalStore`. The server snapshot is the initial session and
 * never changes, so the first client render (hydration) matches the server's HTML; `start()`,
 * called after mount (hydration is over by then), follows the client's auth events: the
 * `initialSession` event, delivered asynchronously and without a network call, gives the stored
 * session, then sign-in, renewal and sign-out follow in order. (Reading `getClaims()` beside the
 * events would race them: an answer could land after a later sign-out.)
 */
export class SessionStore {
  readonly #client: SessionClient;
  readonly #server: SessionState;
  readonly #listeners = new Set<() => void>();
  #state: SessionState;

  constructor(client: SessionClient, initial: InitialSession) {
    this.#client = client;
    this.#server = initialState(initial);
    this.#state = this.#server;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  };

  getSnapshot = (): SessionState => this.#state;

  getServerSnapshot = (): SessionState => this.#server;

  /** Follows the client; returns the function that stops following. */
  start(): () => void {
    const listener: AuthListener = (event) => this.#set(stateOf(event.claims));
    return this.#client.onAuthStateChange(listener);
  }

  #set(next: SessionState): void {
    const current = this.#state;
    const same =
      current.status === next.status &&
      (next.status !== 'signedIn' || (current.claims !== null && current.claims.jti === next.claims?.jti));
    if (same) return;
    this.#state = next;
    for (const listener of [...this.#listeners]) listener();
  }
}
