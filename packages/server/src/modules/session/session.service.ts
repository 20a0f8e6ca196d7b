import { createHmac } from 'node:crypto';
import type { AccessTokenClaims, AuthMethod, OAuthTokenBundle } from '@tessera/core';
import type { Config } from '../../config/index.js';
import { safeEqual, sha256 } from '../../crypto/hash.js';
import { open, seal } from '../../crypto/master-key.js';
import { randomUUID } from '../../crypto/random.js';
import type { Write } from '../../db/prepared.js';
import type { Session, User } from '../../db/schema.js';
import { OAuthError } from '../../errors.js';
import { type ClientNetwork, sessionNetwork } from '../../net/client-network.js';
import { looksLikeRefreshToken, newRefreshToken, parseRefreshToken } from '../../tokens/refresh-token.js';
import { shapeForClient, type TokenService } from '../../tokens/token.service.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { AuditEvent } from '../audit/events.js';
import { lifetimesOf, type Project } from '../projects/project.js';
import type { VerifyResult } from '../verify/verify.service.js';
import type { RefreshTokenRow, SessionRepository } from './session.repository.js';

/** Who makes a token request: a hash of its IP address and User-Agent (never stored in clear). */
export type ClientFingerprint = string;

export function clientFingerprint(ip: string, userAgent: string | undefined): ClientFingerprint {
  return sha256(`${ip}\0${userAgent ?? ''}`);
}

/** What a revocation request did (RFC 7009 answers 200 for all but `wrong_client`). */
export type RevokeOutcome = 'revoked' | 'ignored' | 'wrong_client';

/** Who ended a session, as the `session.revoked` event says. */
export type RevokedBy = 'user' | 'integrator';

/** A refresh token that is genuine (its secret matched), with its session and user. */
export interface RefreshContext {
  token: RefreshTokenRow;
  /** Without its last refresh, which a grant neither needs nor writes (see SessionRepository). */
  session: Omit<Session, 'last_refreshed_at' | 'ip_network'>;
  user: User;
  /** The user's custom claims, parsed. */
  claims: Record<string, unknown>;
  secret: string;
}

/** RFC 7662's answer; the service's members come last so no custom claim can replace them. */
export type Introspection = { active: false } | ({ active: true } & Record<string, unknown>);

export interface SessionDeps {
  config: Readonly<Config>;
  repository: SessionRepository;
  minter: TokenService;
  projects: { byId(id: string): Promise<Project | undefined> };
  /** Derives each successor's encryption key (grace-window answers). */
  successorKey: Buffer;
  audit: AuditLog;
  /** This instance's revocation list: a revoked session fails its /verify at once. */
  revocations: { add(sessionId: string): void };
  accessTokens: {
    authentic(token: string): Promise<AccessTokenClaims | string>;
    verify(token: string, audience: string): VerifyResult | Promise<VerifyResult>;
  };
  now: () => number;
}

/** What a sign-in stores and knows beside its new session. */
export interface StartOptions {
  /** The sign-in's event, recorded with the session (see `AuditLog.recordWith`). */
  event?: AuditEvent;
  /** Other writes of the sign-in (e.g. refunds of guess budgets), stored with the session. */
  writes?: readonly Write[];
  /** The user's custom claims, when the sign-in has read them already. */
  claims?: Record<string, unknown>;
  /**
   * The session's id, when the sign-in must start at most one session (an OTP challenge: see
   * OtpService); a second start with it fails on the primary key. Random otherwise.
   */
  sessionId?: string;
  /** The client's network (`clientNetwork`), stored widened (`sessionNetwork`) to show the session by. */
  network?: ClientNetwork;
}

/**
 * A session before it is stored (`SessionService.plan`): its row but for the user, and its first
 * refresh token (stored as `id` and `secret_hash`; `token` is what the client gets).
 */
export interface PlannedSession {
  session: Omit<Session, 'user_id'>;
  refresh: { id: string; secret_hash: string; token: string };
}

const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);

/**
 * Sessions: start after a sign-in, the refresh grant with rotation, revocation and introspection.
 * A session is the unit of revocation: every token carries or points to its session, and a revoked
 * session ends them all.
 */
export class SessionService {
  constructor(private readonly deps: SessionDeps) {}

  /**
   * Starts a session after a successful authentication and returns its first bundle. The sign-in's
   * `event` and other `writes` are stored with the session (one statement on PostgreSQL).
   */
  async start(
    project: Project,
    user: User,
    method: AuthMethod,
    binding: { deviceId?: string; passkeyId?: string } = {},
    options: StartOptions = {},
  ): Promise<OAuthTokenBundle> {
    const planned = this.plan(project, method, binding, options.sessionId, options.network);
    const session: Session = { ...planned.session, user_id: user.id };
    // The sign-in's writes first, in their order (see `together`).
    const writes = [...(options.writes ?? []), ...this.deps.repository.creation(session, planned.refresh)];
    if (options.event) await this.deps.audit.recordWith(options.event, writes);
    else await this.deps.repository.store(writes);
    return this.bundleOf(project, user, planned, options.claims);
  }

  /**
   * A session about to start, for `start` or for a sign-in method's own statement to store
   * (`bundleOf` then mints its first bundle): its row but for the user, and its first refresh token.
   * `sessionId`, `network`: see StartOptions.
   */
  plan(
    project: Project,
    method: AuthMethod,
    binding: { deviceId?: string; passkeyId?: string } = {},
    sessionId?: string,
    network?: ClientNetwork,
  ): PlannedSession {
    const now = this.deps.now();
    const refresh = newRefreshToken();
    return {
      session: {
        id: sessionId ?? randomUUID(),
        project_id: project.id,
        auth_method: method,
        auth_time: now,
        device_id: binding.deviceId ?? null,
        passkey_id: binding.passkeyId ?? null,
        created_at: now,
        expires_at: now + lifetimesOf(project, this.deps.config).refresh * 1000,
        last_refreshed_at: null,
        revoked_at: null,
        revoked_reason: null,
        client_id: null,
        scope: null,
        resource: null,
        ip_network: network === undefined ? null : sessionNetwork(network),
      },
      refresh: { id: refresh.id, secret_hash: sha256(refresh.secret), token: refresh.token },
    };
  }

  /** The first bundle of a `plan`ned session that the caller's own statement stored for `user`. */
  bundleOf(
    project: Project,
    user: User,
    planned: PlannedSession,
    claims?: Record<string, unknown>,
  ): Promise<OAuthTokenBundle> {
    const session: Session = { ...planned.session, user_id: user.id };
    return this.deps.minter.bundle(project, user, session, planned.refresh.token, claims);
  }

  /**
   * The refresh token a presented string names, when its secret is right (compared in constant
   * time), rotated or not. Used by the grant and by introspection.
   */
  async verifyRefreshToken(presented: string): Promise<RefreshContext | undefined> {
    const parsed = parseRefreshToken(presented);
    if (!parsed) return undefined;
    const found = await this.deps.repository.findForRefresh(parsed.id);
    if (!found || !safeEqual(sha256(parsed.secret), found.token.secret_hash)) return undefined;
    return { ...found, secret: parsed.secret };
  }

  /**
   * The refresh grant: checks the token, rotates it, returns a new bundle. A rotated token
   * presented again revokes its whole session, except when the same client presents it within the
   * grace window while the successor is still unused: then it gets that same successor (two tabs
   * refreshing at once, or a retry whose answer was lost to a slow database or a crashed instance).
   */
  async refresh(
    clientProject: Project,
    presented: string,
    client: ClientFingerprint,
    /** The OAuth client making the grant, when it is one (not the project's API key). */
    oauthClientId?: string,
  ): Promise<OAuthTokenBundle> {
    const clientId = clientProject.api_key_id;
    // The one-statement path serves sessions without an OAuth client only (its SQL says so).
    const current = oauthClientId ? undefined : await this.#refreshCurrent(clientProject, presented, client);
    if (current) return current;
    const found = await this.verifyRefreshToken(presented);
    if (!found) throw invalidGrant('refresh token is invalid');
    const { token, session, user, claims } = found;
    const project = await this.deps.projects.byId(session.project_id);
    if (!project || project.api_key_id !== clientId || (session.client_id ?? undefined) !== oauthClientId)
      throw invalidGrant('refresh token was issued to another client');
    if (session.revoked_at !== null) throw invalidGrant('session has been revoked');
    const now = this.deps.now();
    if (now >= token.expires_at || now >= session.expires_at) throw invalidGrant('refresh token has expired');
    if (token.rotated_at === null) {
      const next = newRefreshToken();
      const event: AuditEvent = {
        projectId: session.project_id,
        userId: session.user_id,
        type: 'refresh',
        data: { session_id: session.id },
      };
      // On PostgreSQL the event is stored by the rotation's own statement: one round trip.
      const inline = await this.deps.audit.inline(event);
      const won = await this.deps.repository.rotate(
        token.id,
        {
          id: next.id,
          secret_hash: sha256(next.secret),
          successor_enc: seal(this.#successorKey(found.secret), next.token, token.id),
          session_id: session.id,
          expires_at: session.expires_at,
        },
        now,
        client,
        inline,
      );
      if (won) {
        if (inline) this.deps.audit.stored(inline);
        else await this.deps.audit.record(event);
        return this.#mint(project, user, session, next.token, claims);
      }
    }
    return this.#replayed(found, project, client);
  }

  /**
   * PostgreSQL: the grant of a current token (the common case) in one statement, which checks,
   * rotates and records at once (`SessionRepository.rotateCurrent`). Undefined when that is not
   * available or the token is not current; `refresh` then reads the token and decides (grace,
   * reuse, expiry, another client, a revoked session or an invalid token) as on SQLite.
   */
  async #refreshCurrent(
    project: Project,
    presented: string,
    client: ClientFingerprint,
  ): Promise<OAuthTokenBundle | undefined> {
    const { repository, audit } = this.deps;
    if (!repository.rotatesInOneStatement) return undefined;
    const parsed = parseRefreshToken(presented);
    if (!parsed) return undefined;
    const stamp = await audit.inlineStamp(project.id, 'refresh');
    if (!stamp) return undefined;
    const next = newRefreshToken();
    const now = this.deps.now();
    const found = await repository.rotateCurrent(
      { id: parsed.id, secret_hash: sha256(parsed.secret) },
      project.id,
      {
        id: next.id,
        secret_hash: sha256(next.secret),
        successor_enc: seal(this.#successorKey(parsed.secret), next.token, parsed.id),
      },
      now,
      client,
      stamp,
    );
    if (!found) return undefined;
    const { session, user, claims } = found;
    audit.stored({
      ...stamp,
      projectId: project.id,
      userId: user.id,
      type: 'refresh',
      data: { session_id: session.id },
    });
    return this.deps.minter.bundle(project, user, session, next.token, claims);
  }

  /** A rotated token presented again: the grace answer to the same client, else reuse. */
  async #replayed(
    found: RefreshContext,
    project: Project,
    client: ClientFingerprint,
  ): Promise<OAuthTokenBundle> {
    const { session, user } = found;
    const { repository } = this.deps;
    const row = await repository.findRefreshToken(found.token.id);
    const graceMs = this.deps.config.refreshGrace * 1000;
    const sameClient = row?.rotated_by != null && safeEqual(row.rotated_by, client);
    // Only a same-client replay with a window to be in reads its successor.
    const successor =
      graceMs > 0 && row?.rotated_at != null && row.successor_enc && sameClient
        ? open(this.#successorKey(found.secret), row.successor_enc, row.id)
        : undefined;
    const next = successor === undefined ? undefined : parseRefreshToken(successor);
    const successorRow = next && (await repository.findRefreshToken(next.id));
    // The clock is read after the database answered, and the window runs from when the rotation
    // took effect (on PostgreSQL the successor's `created_at` says so, lock waits included): a
    // slow database must not turn a retry into a reuse.
    const now = this.deps.now();
    if (
      successor !== undefined &&
      successorRow?.rotated_at === null &&
      // Strictly inside the window (0 is none at all: no successor was read). The rotation took
      // effect at the later of the two stamps, which may be a few ms past `now` (the statement's
      // wait, on another clock): inside too.
      now - Math.max(row?.rotated_at ?? 0, successorRow.created_at) < graceMs
    ) {
      // Not waited for: the grace answer needs no write (a database still struggling after a
      // stalled commit must not fail the retry it was meant to save). Failures are logged.
      void this.deps.audit.record({
        projectId: session.project_id,
        userId: session.user_id,
        type: 'refresh.grace',
        data: { session_id: session.id },
      });
      return this.#mint(project, user, session, successor, found.claims);
    }
    if (await this.deps.repository.revoke(session.id, 'refresh_token_reuse', now)) {
      this.deps.revocations.add(session.id);
      await this.deps.audit.record({
        projectId: session.project_id,
        userId: session.user_id,
        type: 'refresh.reuse_detected',
        data: { session_id: session.id },
      });
    }
    throw invalidGrant('refresh token was already used; the session has been revoked');
  }

  /** A refreshed bundle: an OAuth client's session gets its client's claims and shape. */
  async #mint(
    project: Project,
    user: User,
    session: Omit<Session, 'last_refreshed_at' | 'ip_network'>,
    refreshToken: string,
    claims: Record<string, unknown>,
  ): Promise<OAuthTokenBundle> {
    if (session.client_id === null)
      return this.deps.minter.bundle(project, user, session, refreshToken, claims);
    const bundle = await this.deps.minter.bundle(project, user, session, refreshToken, claims, {
      clientId: session.client_id,
      identifierType: user.identifier_type,
    });
    return shapeForClient(bundle, (session.scope ?? '').split(' ').filter(Boolean));
  }

  #successorKey(secret: string): Buffer {
    return createHmac('sha256', this.deps.successorKey).update(secret).digest();
  }

  /**
   * RFC 7009: revokes the session of a refresh or access token presented by its client. Unknown
   * and invalid tokens are ignored (answered 200 by the route).
   */
  async revokeToken(clientId: string, token: string, oauthClientId?: string): Promise<RevokeOutcome> {
    if (looksLikeRefreshToken(token)) {
      const found = await this.verifyRefreshToken(token);
      return found ? this.#revokeForClient(clientId, found.session, oauthClientId) : 'ignored';
    }
    const claims = await this.deps.accessTokens.authentic(token);
    if (typeof claims === 'string') return 'ignored';
    const session = await this.deps.repository.findById(claims.sid);
    return session ? this.#revokeForClient(clientId, session, oauthClientId) : 'ignored';
  }

  async #revokeForClient(
    clientId: string,
    session: Omit<Session, 'last_refreshed_at' | 'ip_network'>,
    oauthClientId: string | undefined,
  ): Promise<RevokeOutcome> {
    const project = await this.deps.projects.byId(session.project_id);
    if (!project || project.api_key_id !== clientId) return 'wrong_client';
    if ((session.client_id ?? undefined) !== oauthClientId) return 'wrong_client';
    await this.end(session, 'revoked', 'user');
    return 'revoked';
  }

  /** Ends one session and records who did it; false when it had ended already. */
  async end(
    session: Omit<Session, 'last_refreshed_at' | 'ip_network'>,
    reason: string,
    by: RevokedBy,
  ): Promise<boolean> {
    if (!(await this.deps.repository.revoke(session.id, reason, this.deps.now()))) return false;
    this.deps.revocations.add(session.id);
    await this.deps.audit.record({
      projectId: session.project_id,
      userId: session.user_id,
      type: 'session.revoked',
      data: { session_id: session.id, by },
    });
    return true;
  }

  /** Marks sessions ended elsewhere (e.g. in a device removal's transaction) on this instance. */
  ended(sessionIds: readonly string[]): void {
    for (const id of sessionIds) this.deps.revocations.add(id);
  }

  /** RFC 7662 introspection for the project whose credentials were given. */
  async introspect(project: Project, token: string): Promise<Introspection> {
    const inactive = { active: false } as const;
    if (looksLikeRefreshToken(token)) {
      const found = await this.verifyRefreshToken(token);
      if (!found) return inactive;
      const { token: row, session } = found;
      if (row.rotated_at !== null || row.expires_at <= this.deps.now()) return inactive;
      if (session.project_id !== project.id || session.revoked_at !== null) return inactive;
      return {
        active: true,
        token_type: 'refresh_token',
        client_id: session.client_id ?? project.api_key_id,
        sub: session.user_id,
        sid: session.id,
        exp: Math.floor(row.expires_at / 1000),
        iat: Math.floor(session.created_at / 1000),
        iss: this.deps.config.issuer,
      };
    }
    const result = await this.deps.accessTokens.verify(token, project.api_key_id);
    if (result.success) {
      // An OAuth client's token names its client, as its session does (a custom claim of an older
      // token cannot: the session decides); others are the API key's.
      const claimed = (result.claims as { client_id?: unknown }).client_id;
      const session =
        typeof claimed === 'string' ? await this.deps.repository.findById(result.claims.sid) : undefined;
      const clientId =
        session?.client_id != null && session.client_id === claimed ? claimed : project.api_key_id;
      return { ...result.claims, active: true, token_type: 'access_token', client_id: clientId };
    }
    // An OAuth client's token for a resource (RFC 8707) has that resource as its audience.
    // /verify finds a token's project by its audience; this one is found by its session instead.
    const claims = await this.deps.accessTokens.authentic(token);
    if (typeof claims === 'string') return inactive;
    const clientId = (claims as { client_id?: unknown }).client_id;
    if (typeof clientId !== 'string' || claims.exp * 1000 <= this.deps.now()) return inactive;
    const owner = await this.deps.repository.findById(claims.sid);
    if (
      !owner ||
      owner.project_id !== project.id ||
      owner.client_id !== clientId ||
      owner.revoked_at !== null
    )
      return inactive;
    return { ...claims, active: true, token_type: 'access_token' };
  }
}
