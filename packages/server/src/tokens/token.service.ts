import { createHmac } from 'node:crypto';
import {
  ACCESS_TOKEN_TYP,
  type AuthMethod,
  authMethodClaim,
  ID_TOKEN_TYP,
  type OAuthTokenBundle,
  RESERVED_CLAIMS,
} from '@tessera/core';
import type { Config } from '../config/index.js';
import { safeEqual, sha256 } from '../crypto/hash.js';
import { open, seal } from '../crypto/master-key.js';
import { randomToken, randomUUID } from '../crypto/random.js';
import type { Project, Session, User } from '../db/schema.js';
import { OAuthError } from '../errors.js';
import type { KeyStore } from '../keys/key-store.js';
import type { SessionRepository } from '../modules/session/session.repository.js';
import { signJwt } from './jwt.js';

/** Where the integrator's custom claims come from (the claims module); none by default. */
export interface ClaimsSource {
  forUser(projectId: string, userId: string): Promise<Record<string, unknown>>;
}

/** Reads projects by id for refresh grants (cached by the projects service). */
export interface Directory {
  project(id: string): Promise<Project | undefined>;
}

/** Told of session events; the request waits for what they return (e.g. the audit record). */
export interface SessionListener {
  refreshed?(session: Session): Promise<void> | undefined;
  revoked?(sessionId: string, reason: string, session: Session): Promise<void> | undefined;
  reuseDetected?(session: Session): Promise<void> | undefined;
}

const REFRESH_PREFIX = 'tsr_';

/** Custom claims never override the service's own (they are refused on write; this is the second guard). */
function withoutReserved(custom: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(custom)) if (!RESERVED_CLAIMS.has(name)) out[name] = value;
  return out;
}

/** `tsr_<id>.<secret>`: the id finds the row, only a hash of the secret is stored (lucia's pattern). */
export function parseRefreshToken(token: string): { id: string; secret: string } | undefined {
  if (!token.startsWith(REFRESH_PREFIX) || token.length > 200) return undefined;
  const dot = token.indexOf('.', REFRESH_PREFIX.length);
  if (dot < 0) return undefined;
  const id = token.slice(REFRESH_PREFIX.length, dot);
  const secret = token.slice(dot + 1);
  if (!/^[A-Za-z0-9_-]{22}$/.test(id) || !/^[A-Za-z0-9_-]{43}$/.test(secret)) return undefined;
  return { id, secret };
}

function newRefreshToken(): { id: string; secret: string; token: string } {
  const id = randomToken(16);
  const secret = randomToken(32);
  return { id, secret, token: `${REFRESH_PREFIX}${id}.${secret}` };
}

const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);

/**
 * Mints the token bundle and runs refresh-token rotation. Sessions are the unit of revocation:
 * every token carries or points to its session, and a revoked session ends them all.
 */
export class TokenService {
  constructor(
    private readonly config: Readonly<Config>,
    private readonly keys: KeyStore,
    private readonly sessions: SessionRepository,
    private readonly directory: Directory,
    private readonly successorKey: Buffer,
    private readonly claims: ClaimsSource = { forUser: async () => ({}) },
    private readonly listener: SessionListener = {},
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session after a successful authentication and returns its first bundle. */
  async startSession(
    project: Project,
    user: User,
    method: AuthMethod,
    options: { deviceId?: string } = {},
  ): Promise<OAuthTokenBundle> {
    const now = this.now();
    const session: Session = {
      id: randomUUID(),
      project_id: project.id,
      user_id: user.id,
      auth_method: method,
      auth_time: now,
      device_id: options.deviceId ?? null,
      created_at: now,
      expires_at: now + this.config.refreshTokenTtl * 1000,
      last_refreshed_at: null,
      revoked_at: null,
      revoked_reason: null,
    };
    const refresh = newRefreshToken();
    await this.sessions.create(session, { id: refresh.id, secret_hash: sha256(refresh.secret) });
    return this.bundle(project, user, session, refresh.token);
  }

  /** Access token, ID token and the given refresh token, with exactly the specified claims. */
  async bundle(
    project: Project,
    user: User,
    session: Session,
    refreshToken: string,
    /** The user's custom claims when the caller has read them already. */
    customClaims?: Record<string, unknown>,
  ): Promise<OAuthTokenBundle> {
    const method = session.auth_method as AuthMethod;
    const custom = customClaims ?? (await this.claims.forUser(project.id, user.id));
    const key = this.keys.signingKey();
    const iat = Math.floor(this.now() / 1000);
    const clientUserId = user.client_user_id ?? user.id;
    const accessToken = signJwt(
      { alg: 'ES256', kid: key.kid, typ: ACCESS_TOKEN_TYP },
      {
        sub: user.id,
        client_user_id: clientUserId,
        authentication_method: authMethodClaim(method),
        type: 'access_token',
        identifier: user.identifier,
        scope: 'access',
        aud: project.api_key_id,
        exp: iat + this.config.accessTokenTtl,
        iat,
        jti: randomToken(16),
        iss: this.config.issuer,
        sid: session.id,
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
        auth_time: project.numeric_auth_time ? Number(authTime) : authTime,
        identifier: user.identifier,
        type: 'id_token',
        aud: project.api_key_id,
        exp: iat + this.config.idTokenTtl,
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
      expires_in: this.config.accessTokenTtl,
      token_type: 'Bearer',
      auth_method: method,
    };
  }

  #successorKey(secret: string): Buffer {
    return createHmac('sha256', this.successorKey).update(secret).digest();
  }

  /**
   * The refresh grant: checks the token, rotates it, returns a new bundle. A token used a second
   * time revokes its whole session, unless the second use comes within the grace window, when it
   * gets the same successor the first use got (two tabs refreshing at once stay signed in).
   */
  async refresh(clientId: string, presented: string): Promise<OAuthTokenBundle> {
    const parsed = parseRefreshToken(presented);
    if (!parsed) throw invalidGrant('refresh token is invalid');
    const found = await this.sessions.findForRefresh(parsed.id);
    if (!found || !safeEqual(sha256(parsed.secret), found.token.secret_hash))
      throw invalidGrant('refresh token is invalid');
    const { token: row, session, user } = found;
    const project = await this.directory.project(session.project_id);
    if (!project || project.api_key_id !== clientId)
      throw invalidGrant('refresh token was issued to another client');
    if (session.revoked_at !== null) throw invalidGrant('session has been revoked');
    const now = this.now();
    if (now >= row.expires_at || now >= session.expires_at) throw invalidGrant('refresh token has expired');
    const custom = found.claims === null ? {} : (JSON.parse(found.claims) as Record<string, unknown>);

    if (row.rotated_at === null) {
      const next = newRefreshToken();
      const won = await this.sessions.rotate(
        row.id,
        {
          id: next.id,
          secret_hash: sha256(next.secret),
          successor_enc: seal(this.#successorKey(parsed.secret), next.token, row.id),
          session_id: session.id,
          expires_at: session.expires_at,
        },
        now,
      );
      if (won) {
        await this.listener.refreshed?.(session);
        return this.bundle(project, user, { ...session, last_refreshed_at: now }, next.token, custom);
      }
    }
    return this.#reused(parsed, project, user, session);
  }

  async #reused(parsed: { id: string; secret: string }, project: Project, user: User, session: Session) {
    const row = await this.sessions.findRefreshToken(parsed.id);
    const now = this.now();
    if (
      row?.rotated_at != null &&
      row.successor_enc &&
      // Strictly inside the window: TESSERA_REFRESH_GRACE=0 means no grace at all, even for a
      // second use in the same millisecond.
      now - row.rotated_at < this.config.refreshGrace * 1000
    ) {
      const successor = open(this.#successorKey(parsed.secret), row.successor_enc, row.id);
      const next = parseRefreshToken(successor);
      const successorRow = next && (await this.sessions.findRefreshToken(next.id));
      if (successorRow && successorRow.rotated_at === null)
        return this.bundle(project, user, session, successor);
    }
    if (await this.sessions.revoke(session.id, 'refresh_token_reuse', now)) {
      await this.listener.revoked?.(session.id, 'refresh_token_reuse', session);
      await this.listener.reuseDetected?.(session);
    }
    throw invalidGrant('refresh token was already used; the session has been revoked');
  }

  /** Revokes the session of a refresh token (RFC 7009); unknown tokens are ignored. */
  async revokeRefreshToken(
    clientId: string,
    presented: string,
  ): Promise<'revoked' | 'ignored' | 'wrong_client'> {
    const parsed = parseRefreshToken(presented);
    if (!parsed) return 'ignored';
    const row = await this.sessions.findRefreshToken(parsed.id);
    if (!row || !safeEqual(sha256(parsed.secret), row.secret_hash)) return 'ignored';
    return this.revokeSession(clientId, row.session_id);
  }

  async revokeSession(
    clientId: string,
    sessionId: string,
    reason = 'revoked',
  ): Promise<'revoked' | 'ignored' | 'wrong_client'> {
    const session = await this.sessions.findById(sessionId);
    if (!session) return 'ignored';
    const project = await this.directory.project(session.project_id);
    if (!project || project.api_key_id !== clientId) return 'wrong_client';
    if (await this.sessions.revoke(session.id, reason, this.now()))
      await this.listener.revoked?.(session.id, reason, session);
    return 'revoked';
  }
}
