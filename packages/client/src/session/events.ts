import type { AccessTokenClaims } from '@tessera/core';

/**
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
export type AuthEventType = 'signedIn' | 'refreshed' | 'signedOut';

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

export class AuthEvents {
  readonly #listeners = new Set<AuthListener>();

  subscribe(listener: AuthListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  emit(event: AuthEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A faulty listener must not break sign-in or renewal; surface it like an uncaught error.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
