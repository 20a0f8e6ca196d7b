import type { OAuthTokenBundle } from '@tessera/core';
import { type AccessTokenClaims, type AuthenticationMethod, TesseraVerifyError } from '@tessera/verify';
import type { CookieAdapter, SessionCookies } from './cookies.js';
import { TesseraSsrError } from './errors.js';
import type { ResolvedOptions } from './options.js';
import type { Renewer } from './renewal.js';

/**
 * The signed-in user as your server sees it: read from the `HttpOnly` access cookie and verified
 * with `@tessera/verify` (signature, issuer, audience, expiry). The refresh token never leaves the
 * cookie layer.
 *
 * @example
 * ```ts
 * const session: TesseraSession | null = await tessera.getSession(cookies);
 * if (session) console.log(session.user.identifier, session.user.authMethod);
 * ```
 */
export interface TesseraSession {
  user: SessionUser;
  /** The verified claims of the access token, custom claims included. */
  claims: AccessTokenClaims;
  /** The access token, to call your own APIs with `Authorization: Bearer …` from the server. */
  accessToken: string;
  /** When the access token expires, ms since the epoch. */
  expiresAt: number;
}

/**
 * Who is signed in (from the access token's claims).
 *
 * @example
 * ```ts
 * const user: SessionUser = session.user; // { id, clientUserId, identifier, authMethod }
 * ```
 */
export interface SessionUser {
  /** Tessera's user id (`sub`). */
  id: string;
  /** Your id of the user (`client_user_id`). */
  clientUserId: string;
  /** The e-mail address or phone number the user signed in with. */
  identifier: string;
  authMethod: AuthenticationMethod;
}

/** Reads, renews, stores and clears the session cookies. */
export class SessionStore {
  readonly #config: ResolvedOptions;
  readonly #cookies: SessionCookies;
  readonly #renewer: Renewer;

  constructor(config: ResolvedOptions, cookies: SessionCookies, renewer: Renewer) {
    this.#config = config;
    this.#cookies = cookies;
    this.#renewer = renewer;
  }

  /** The session of the access cookie, without renewing: null when absent, invalid or expired. */
  async read(cookies: CookieAdapter): Promise<TesseraSession | null> {
    const token = cookies.get(this.#cookies.names.access);
    if (token === undefined || token === '') return null;
    try {
      return sessionOf(token, await this.#config.verifier.verify(token));
    } catch (error) {
      if (error instanceof TesseraVerifyError && error.status === 401) return null;
      throw error;
    }
  }

  /**
   * The session, renewed first when the access token is missing, invalid or about to expire and a
   * refresh cookie is there — only when `cookies.set` exists, since the rotated refresh token must
   * be stored. A refused refresh token (`invalid_grant`: expired, revoked, reused) clears the cookies.
   */
  async get(cookies: CookieAdapter): Promise<TesseraSession | null> {
    const current = await this.read(cookies);
    const due = current === null || current.expiresAt - this.#config.now() <= this.#config.renewMarginMs;
    if (!due || !cookies.set) return current;
    const refresh = cookies.get(this.#cookies.names.refresh);
    if (refresh === undefined || refresh === '') {
      if (current === null && cookies.get(this.#cookies.names.access) !== undefined) this.clear(cookies);
      return current;
    }
    try {
      return await this.store(cookies, await this.#renewer.renew(refresh));
    } catch (error) {
      // The refresh token is spent, expired or revoked: the session is over.
      if (error instanceof TesseraSsrError && error.code === 'invalid_grant') {
        this.clear(cookies);
        return null;
      }
      // Tessera unreachable or busy: a still-valid access token keeps serving until it expires.
      if (current !== null) return current;
      throw error;
    }
  }

  /** Verifies a new bundle's access token, then writes both cookies. */
  async store(cookies: CookieAdapter, bundle: OAuthTokenBundle): Promise<TesseraSession> {
    let session: TesseraSession;
    try {
      session = sessionOf(bundle.access_token, await this.#config.verifier.verify(bundle.access_token));
    } catch (cause) {
      throw new TesseraSsrError(502, 'upstream_unavailable', 'The new access token could not be verified', {
        cause,
      });
    }
    const { access, refresh } = this.#cookies.names;
    cookies.set?.(access, bundle.access_token, this.#cookies.options(bundle.expires_in));
    cookies.set?.(refresh, bundle.refresh_token, this.#cookies.options(this.#config.refreshCookieMaxAge));
    return session;
  }

  /** Removes both session cookies. */
  clear(cookies: CookieAdapter): void {
    const { access, refresh } = this.#cookies.names;
    cookies.set?.(access, '', this.#cookies.options(0));
    cookies.set?.(refresh, '', this.#cookies.options(0));
  }
}

function sessionOf(accessToken: string, claims: AccessTokenClaims): TesseraSession {
  return {
    user: {
      id: claims.sub,
      clientUserId: claims.client_user_id,
      identifier: claims.identifier,
      authMethod: claims.authentication_method,
    },
    claims,
    accessToken,
    expiresAt: claims.exp * 1000,
  };
}

/** What the auth routes tell the browser about the user: never a token. */
export function publicUser(session: TesseraSession | null): SessionUser | null {
  return session ? { ...session.user } : null;
}
