import type { AccessTokenClaims } from '@tessera/core';

/**
 * - `initialSession` — first event of every listener: the session found in storage at load (no
 *   network call), or `claims: null` when there is none
 * - `signedIn` — a sign-in stored a new session (here or in another tab)
 * - `refreshed` — the tokens were renewed (here or in another tab)
 * - `signedOut` — logout, or the session ended (refresh token expired or revoked)
 *
 * @example
 * ```ts
 * import type { AuthEventType } from '@tessera/client';
 *
 * const isSignedIn = (type: AuthEventType) => type !== 'signedOut';
 * ```
 */
export type AuthEventType = 'initialSession' | 'signedIn' | 'refreshed' | 'signedOut';

/**
 * What {@link AuthListener}s receive: the event and the claims of the current access token
 * (decoded, not verified), or null once signed out.
 *
 * @example
 * ```ts
 * import type { AuthEvent } from '@tessera/client';
 *
 * const greet = (event: AuthEvent) => event.claims?.identifier ?? 'signed out';
 * ```
 */
export interface AuthEvent {
  type: AuthEventType;
  claims: AccessTokenClaims | null;
}

/**
 * A listener of {@link TesseraClient.onAuthStateChange}.
 *
 * @example
 * ```ts
 * import type { AuthListener } from '@tessera/client';
 *
 * const listener: AuthListener = ({ type }) => console.log('auth state:', type);
 * ```
 */
export type AuthListener = (event: AuthEvent) => void;

/** Calls a listener; a faulty one must not break sign-in or renewal: surface it like an uncaught error. */
function call(listener: AuthListener, event: AuthEvent): void {
  try {
    listener(event);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

export class AuthEvents {
  readonly #listeners = new Set<AuthListener>();

  /**
   * Adds a listener. With `initial`, its first event is the `initialSession` that `snapshot`
   * describes once `ready` settles; events emitted before that are not passed on, since the
   * snapshot, taken after them, already shows their outcome.
   */
  subscribe(
    listener: AuthListener,
    initial?: { ready: Promise<unknown>; snapshot: () => AuthEvent },
  ): () => void {
    let live = !initial;
    const entry: AuthListener = (event) => {
      if (live) listener(event);
    };
    this.#listeners.add(entry);
    const deliver = () => {
      if (!initial || !this.#listeners.has(entry)) return;
      live = true;
      call(listener, initial.snapshot());
    };
    initial?.ready.then(deliver, deliver);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  emit(event: AuthEvent): void {
    for (const listener of [...this.#listeners]) call(listener, event);
  }
}
