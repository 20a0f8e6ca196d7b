import {
  ACCESS_TOKEN_TYP,
  type AuthMethod,
  authMethodClaim,
  ID_TOKEN_TYP,
  type OAuthTokenBundle,
  RESERVED_CLAIMS,
} from '@tessera/core';
import type { Config } from '../config/index.js';
import { randomToken } from '../crypto/random.js';
import type { Session, User } from '../db/schema.js';
import type { KeyStore } from '../keys/key-store.js';
import { lifetimesOf, type Project } from '../modules/projects/project.js';
import { clientUserIdOf } from '../modules/users/client-user-id.js';
import { signJwt } from './jwt.js';

/** Where the integrator's custom claims come from (the claims module); none by default. */
export interface ClaimsSource {
  forUser(projectId: string, userId: string): Promise<Record<string, unknown>>;
}

/** What a bundle minted for an OAuth client (issue 31) adds to the specified claims. */
export interface ClientContext {
  /** The client's `client_id`: the ID token's `aud` and `azp`, the access token's `client_id`. */
  clientId: string;
  /** The authorization request's nonce, echoed in the ID token. */
  nonce?: string;
  /** The user's identifier type, for `amr` (an SMS code is `sms` as well as `otp`). */
  identifierType: 'email' | 'phone';
}

/** RFC 8176 authentication method references of each sign-in method. */
export function amrOf(method: AuthMethod, identifierType: 'email' | 'phone'): string[] {
  switch (method) {
    case 'OTP':
      return identifierType === 'phone' ? ['otp', 'sms'] : ['otp'];
    case 'TRUSTED DEVICE':
      return ['swk'];
    case 'PIN':
      return ['swk', 'pin', 'mfa'];
    case 'BIOMETRIC':
      return ['hwk', 'user'];
  }
}

/** Custom claims never override the service's own (they are refused on write; this is the second guard). */
function withoutReserved(custom: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(custom)) if (!RESERVED_CLAIMS.has(name)) out[name] = value;
  return out;
}

/**
 * Mints the token bundle of a session: the ES256 access and ID tokens with exactly the specified
 * claims, beside the refresh token the session service issued. Sessions, refresh and revocation
 * live in modules/session.
 */
export class TokenService {
  constructor(
    private readonly config: Readonly<Config>,
    private readonly keys: KeyStore,
    private readonly claims: ClaimsSource = { forUser: async () => ({}) },
    private readonly now: () => number = Date.now,
  ) {}

  /** Access token, ID token and the given refresh token, with exactly the specified claims. */
  async bundle(
    project: Project,
    user: User,
    session: Omit<Session, 'last_refreshed_at' | 'ip_network'>,
    refreshToken: string,
    /** The user's custom claims when the caller has read them already. */
    customClaims?: Record<string, unknown>,
    /** A session an OAuth client's code started: see `ClientContext`. */
    client?: ClientContext,
  ): Promise<OAuthTokenBundle> {
    const method = session.auth_method as AuthMethod;
    const custom = customClaims ?? (await this.claims.forUser(project.id, user.id));
    const key = this.keys.signingKey();
    const lifetimes = lifetimesOf(project, this.config);
    const iat = Math.floor(this.now() / 1000);
    const clientUserId = clientUserIdOf(user);
    const accessToken = signJwt(
      { alg: 'ES256', kid: key.kid, typ: ACCESS_TOKEN_TYP },
      {
        sub: user.id,
        client_user_id: clientUserId,
        authentication_method: authMethodClaim(method),
        type: 'access_token',
        identifier: user.identifier,
        scope: 'access',
        // RFC 8707: a token asked for a resource is for that resource alone. It names its project
        // too: any project's client may ask for any resource URL, so a resource server checks that
        // the token is of its own project (@tessera/verify's `resource` option).
        aud: session.resource ?? project.api_key_id,
        ...(session.resource ? { api_key_id: project.api_key_id } : {}),
        exp: iat + lifetimes.access,
        iat,
        jti: randomToken(16),
        iss: this.config.issuer,
        sid: session.id,
        ...(client ? { client_id: client.clientId } : {}),
        ...withoutReserved(custom),
      },
      key.privateKey,
    );
    const authTime = String(Math.floor(session.auth_time / 1000));
    const idToken = signJwt(
      { alg: 'ES256', kid: key.kid, typ: ID_TOKEN_TYP },
      {
        sub: user.id,
        client_user_id: clientUserId,
        // OpenID Connect Core §2 makes auth_time a number: always so for an OAuth client.
        auth_time: project.numeric_auth_time || client ? Number(authTime) : authTime,
        identifier: user.identifier,
        type: 'id_token',
        aud: client?.clientId ?? project.api_key_id,
        ...(client
          ? {
              azp: client.clientId,
              amr: amrOf(method, client.identifierType),
              sid: session.id,
              ...(client.nonce !== undefined ? { nonce: client.nonce } : {}),
            }
          : {}),
        exp: iat + lifetimes.id,
        iat,
        jti: randomToken(16),
        iss: this.config.issuer,
      },
      key.privateKey,
    );
    return {
      access_token: accessToken,
      id_token: idToken,
      refresh_token: refreshToken,
      expires_in: lifetimes.access,
      token_type: 'Bearer',
      auth_method: method,
    };
  }
}

/**
 * The bundle as an OAuth client gets it: a refresh token only with `offline_access`, an ID token
 * only with `openid`, and the granted `scope` (RFC 6749 §5.1).
 */
export function shapeForClient(
  bundle: OAuthTokenBundle,
  scopes: readonly string[],
): OAuthTokenBundle & { scope: string } {
  const { refresh_token, id_token, ...rest } = bundle;
  return {
    ...rest,
    ...(scopes.includes('openid') ? { id_token } : {}),
    ...(scopes.includes('offline_access') ? { refresh_token } : {}),
    scope: scopes.join(' '),
  } as OAuthTokenBundle & { scope: string };
}
