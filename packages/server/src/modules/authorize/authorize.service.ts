import { createHash } from 'node:crypto';
import type { AuthMethod, OAuthTokenBundle } from '@tessera/core';
import type { Config } from '../../config/index.js';
import { hmac, safeEqual, sha256 } from '../../crypto/hash.js';
import { randomToken, randomUUID } from '../../crypto/random.js';
import type { Session } from '../../db/schema.js';
import { OAuthError } from '../../errors.js';
import { newRefreshToken } from '../../tokens/refresh-token.js';
import { shapeForClient, type TokenService } from '../../tokens/token.service.js';
import type { AuditEvent } from '../audit/events.js';
import type { OAuthClient } from '../clients/client.js';
import type { ClientsService } from '../clients/clients.service.js';
import { isUrlClientId, MetadataDocumentError } from '../clients/metadata-document.js';
import { lifetimesOf, type Project } from '../projects/project.js';
import type { SessionRepository } from '../session/session.repository.js';
import type { AuthorizeRepository, PendingRequest } from './authorize.repository.js';
import {
  type AuthorizationRequest,
  checkParams,
  type RawParams,
  RedirectedError,
  trustedTarget,
  UntrustedRequest,
} from './request.js';

/** How long a code lives (issue 31: 60 s). */
export const CODE_TTL_MS = 60_000;
/** How long the user has on the hosted pages. */
export const REQUEST_TTL_MS = 15 * 60_000;

/** Where the browser goes next. */
export type Outcome =
  | { kind: 'error_page'; description: string }
  | {
      kind: 'redirect';
      redirect_uri: string;
      response_mode: 'query' | 'form_post';
      params: Record<string, string>;
    }
  | { kind: 'sign_in' | 'consent'; request: PendingRequest; client: OAuthClient; project: Project };

/** The hosted session a browser's cookie names, when it is live. */
export interface HostedSession {
  id: string;
  project_id: string;
  session_id: string;
  user_id: string;
  auth_time: number;
  auth_method: AuthMethod;
}

/** A browser's cookies as the service needs them. */
export interface BrowserState {
  /** The browser-binding secret set when a pending request was made (`tessera_authz`). */
  binding?: string;
  /** The hosted session cookie (`id.secret`) of the client's project, if any. */
  hosted?: string;
}

export interface AuthorizeDeps {
  config: Readonly<Config>;
  repository: AuthorizeRepository;
  clients: ClientsService;
  projects: { byId(id: string): Promise<Project | undefined> };
  sessions: SessionRepository;
  claims: { forUser(projectId: string, userId: string): Promise<Record<string, unknown>> };
  minter: TokenService;
  /** Revokes sessions and tells this instance's revocation list. */
  revoke(sessionIds: string[], reason: string): Promise<void>;
  /** Tells this instance's revocation list of sessions ended by a statement of their own. */
  ended(sessionIds: readonly string[]): void;
  /** Key of the CSRF tokens of the hosted pages' forms. */
  csrfKey: Buffer;
  /** Where consents given and withdrawn are recorded. */
  audit?: { record(event: AuditEvent): Promise<void> };
  now: () => number;
}

const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * The authorization code flow (issue 31): the authorization endpoint's decisions, the hosted
 * pages' pending requests, hosted single sign-on sessions, consent, and the code exchange. A chain
 * of named steps, each refusing in the form its position allows: before the redirect URI is
 * trusted an error page, after it a redirected error with `iss` (RFC 9207).
 */
export class AuthorizeService {
  constructor(private readonly deps: AuthorizeDeps) {}

  get issuer(): string {
    return this.deps.config.issuer;
  }

  /**
   * GET/POST /oauth/authorize, and /oauth/authorize/{api_key_id} (`scope`: that project, whose
   * clients alone it serves; a Client ID Metadata Document's client is served there only).
   */
  async authorize(
    params: RawParams,
    browser: BrowserState,
    hostedCookieOf: (p: Project) => string | undefined,
    scope?: Project,
  ): Promise<Outcome> {
    const clientId = typeof params.client_id === 'string' ? params.client_id : '';
    let request: AuthorizationRequest;
    let client: OAuthClient;
    try {
      const target = trustedTarget(params, await this.#client(clientId, scope));
      client = target.client;
      request = checkParams(params, client, target.redirect_uri);
    } catch (error) {
      if (error instanceof UntrustedRequest) return { kind: 'error_page', description: error.message };
      if (error instanceof MetadataDocumentError) return { kind: 'error_page', description: error.message };
      if (error instanceof RedirectedError)
        return this.#redirectError(error.error, error.message, error.target);
      throw error;
    }
    const project = await this.deps.projects.byId(client.project_id);
    if (!project) return { kind: 'error_page', description: 'this client_id is not registered' };
    const hosted = await this.hostedSession(project, hostedCookieOf(project) ?? browser.hosted);
    const needsSignIn =
      !hosted ||
      request.prompt.includes('login') ||
      (request.max_age !== undefined && this.deps.now() - hosted.auth_time > request.max_age * 1000);
    if (needsSignIn && request.prompt.includes('none'))
      return this.#redirectError('login_required', 'the user is not signed in', request);
    if (!needsSignIn && hosted) {
      const consent = await this.#needsConsent(client, hosted.user_id, request);
      if (!consent) return this.#issueCode(project, client, request, hosted);
      if (request.prompt.includes('none'))
        return this.#redirectError('consent_required', 'the user has not consented to this client', request);
    }
    const pending: PendingRequest = {
      id: randomToken(24),
      project_id: project.id,
      params: request,
      browser_hash: sha256(browser.binding ?? ''),
      expires_at: this.deps.now() + REQUEST_TTL_MS,
    };
    await this.deps.repository.insertRequest(pending, this.deps.now());
    return { kind: needsSignIn ? 'sign_in' : 'consent', request: pending, client, project };
  }

  /** The CSRF token of a pending request's forms: bound to the request and to the browser's binding cookie. */
  csrfToken(requestId: string, binding: string): string {
    return hmac(this.deps.csrfKey, 'oauth-form', requestId, binding);
  }

  /**
   * A pending request of this browser (its binding cookie and the form's CSRF token both match),
   * with its client and project; an OAuthError otherwise.
   */
  async pending(
    requestId: string,
    binding: string | undefined,
    csrf?: string,
  ): Promise<{ request: PendingRequest; client: OAuthClient; project: Project }> {
    const request = requestId.length <= 64 ? await this.deps.repository.findRequest(requestId) : undefined;
    if (!request || request.expires_at <= this.deps.now())
      throw new OAuthError(
        400,
        'invalid_request',
        'this sign-in request has expired; go back to the application and start again',
      );
    if (!binding || !safeEqual(sha256(binding), request.browser_hash))
      throw new OAuthError(403, 'invalid_request', 'this sign-in request was started in another browser');
    if (csrf !== undefined && !safeEqual(csrf, this.csrfToken(requestId, binding)))
      throw new OAuthError(
        403,
        'invalid_request',
        'the form is stale or was not sent by this page; reload it',
      );
    const project = await this.deps.projects.byId(request.project_id);
    let client: OAuthClient | undefined;
    try {
      client = project && (await this.deps.clients.resolve(request.params.client_id, project));
    } catch (error) {
      if (!(error instanceof MetadataDocumentError)) throw error;
      throw new OAuthError(400, 'invalid_request', error.message);
    }
    if (!client || !project)
      throw new OAuthError(400, 'invalid_request', 'the client of this request no longer exists');
    return { request, client, project };
  }

  /** The client of an authorization request (an UntrustedRequest when it is not there, or a bad client id). */
  async #client(clientId: string, scope: Project | undefined): Promise<OAuthClient | undefined> {
    if (!clientId) return undefined;
    if (!scope && !isUrlClientId(clientId)) return this.deps.clients.byClientId(clientId);
    return this.deps.clients.resolve(clientId, scope);
  }

  /**
   * The user signed in on the hosted pages (Tessera session `sessionId` of the request's project):
   * a new hosted session (always a new cookie: no session fixation) and the next step.
   */
  async signedIn(
    pending: { request: PendingRequest; client: OAuthClient; project: Project },
    sessionId: string,
  ): Promise<{ outcome: Outcome; cookie: string; expiresAt: number }> {
    const { project, client, request } = pending;
    const session = await this.deps.sessions.findById(sessionId);
    const now = this.deps.now();
    if (!session || session.project_id !== project.id || session.revoked_at !== null)
      throw new OAuthError(400, 'invalid_request', 'the sign-in is not valid for this application');
    // Only a sign-in made for this request starts a hosted session (not an older token replayed).
    if (now - Number(session.auth_time) > REQUEST_TTL_MS || session.client_id !== null)
      throw new OAuthError(400, 'invalid_request', 'sign in again');
    const id = randomToken(16);
    const secret = randomToken(32);
    const expiresAt = Number(session.expires_at);
    await this.deps.repository.insertBrowserSession({
      id,
      secret_hash: sha256(secret),
      project_id: project.id,
      session_id: session.id,
      created_at: now,
      expires_at: expiresAt,
      ended_at: null,
    });
    const hosted: HostedSession = {
      id,
      project_id: project.id,
      session_id: session.id,
      user_id: session.user_id,
      auth_time: Number(session.auth_time),
      auth_method: session.auth_method as AuthMethod,
    };
    const consent = await this.#needsConsent(client, hosted.user_id, request.params);
    const outcome: Outcome = consent ? { kind: 'consent', ...pending } : await this.#finish(pending, hosted);
    return { outcome, cookie: `${id}.${secret}`, expiresAt };
  }

  /** The consent screen's answer. */
  async consented(
    pending: { request: PendingRequest; client: OAuthClient; project: Project },
    hosted: HostedSession | undefined,
    approved: boolean,
  ): Promise<Outcome> {
    const { request, client, project } = pending;
    if (!hosted) throw new OAuthError(400, 'invalid_request', 'sign in first');
    if (!approved) {
      await this.deps.repository.deleteRequest(request.id);
      return this.#redirectError('access_denied', 'the user refused the request', request.params);
    }
    await this.deps.repository.saveConsent(
      project.id,
      hosted.user_id,
      client.client_id,
      request.params.scopes,
      this.deps.now(),
    );
    await this.deps.audit?.record({
      projectId: project.id,
      userId: hosted.user_id,
      type: 'consent.granted',
      data: { client_id: client.client_id, scope: request.params.scopes.join(' ') },
    });
    return this.#finish(pending, hosted);
  }

  /** The live hosted session a cookie names for `project`, if any. */
  async hostedSession(project: Project, cookie: string | undefined): Promise<HostedSession | undefined> {
    if (!cookie) return undefined;
    const dot = cookie.indexOf('.');
    if (dot <= 0 || cookie.length > 200) return undefined;
    const row = await this.deps.repository.findBrowserSession(cookie.slice(0, dot));
    const now = this.deps.now();
    if (
      !row ||
      !safeEqual(sha256(cookie.slice(dot + 1)), row.secret_hash) ||
      row.project_id !== project.id ||
      row.ended_at !== null ||
      row.revoked_at !== null ||
      row.expires_at <= now ||
      row.session_expires_at <= now
    )
      return undefined;
    return {
      id: row.id,
      project_id: row.project_id,
      session_id: row.session_id,
      user_id: row.user_id,
      auth_time: row.auth_time,
      auth_method: row.auth_method as AuthMethod,
    };
  }

  /**
   * A withdrawn grant (its consent row deleted): the client's sessions of the user end (their
   * tokens stop working), and the withdrawal is recorded.
   */
  async grantWithdrawn(
    projectId: string,
    clientId: string,
    userId: string,
    by: 'user' | 'integrator',
  ): Promise<void> {
    this.deps.ended(
      await this.deps.sessions.revokeClientSessions(clientId, 'grant_revoked', this.deps.now(), userId),
    );
    await this.deps.audit?.record({
      projectId,
      userId,
      type: 'consent.revoked',
      data: { client_id: clientId, by },
    });
  }

  /** Ends a hosted session and its Tessera session (sign-out on the hosted pages). */
  async endHostedSession(hosted: HostedSession): Promise<void> {
    await this.deps.repository.endBrowserSession(hosted.id, this.deps.now());
    await this.deps.revoke([hosted.session_id], 'signed_out');
  }

  /** A code for the request: spends the pending request (one use) and redirects with the code. */
  async #finish(
    pending: { request: PendingRequest; client: OAuthClient; project: Project },
    hosted: HostedSession,
  ): Promise<Outcome> {
    if (!(await this.deps.repository.deleteRequest(pending.request.id)))
      throw new OAuthError(400, 'invalid_request', 'this sign-in request has been completed already');
    return this.#issueCode(pending.project, pending.client, pending.request.params, hosted);
  }

  async #needsConsent(client: OAuthClient, userId: string, request: AuthorizationRequest): Promise<boolean> {
    if (client.first_party) return false;
    if (request.prompt.includes('consent')) return true;
    const granted = await this.deps.repository.consent(userId, client.client_id);
    return !granted || request.scopes.some((s) => !granted.includes(s));
  }

  async #issueCode(
    project: Project,
    client: OAuthClient,
    request: AuthorizationRequest,
    hosted: HostedSession,
  ): Promise<Outcome> {
    const code = randomToken(32);
    const now = this.deps.now();
    await this.deps.repository.insertCode({
      id: sha256(code),
      project_id: project.id,
      client_id: client.client_id,
      redirect_uri: request.redirect_uri,
      code_challenge: request.code_challenge,
      nonce: request.nonce ?? null,
      scope: request.scopes.join(' '),
      resource: request.resource ?? null,
      user_id: hosted.user_id,
      session_id: hosted.session_id,
      issued_session_id: null,
      created_at: now,
      expires_at: now + CODE_TTL_MS,
      used_at: null,
    });
    return this.#redirect(request, { code });
  }

  #redirectError(
    error: string,
    description: string,
    target: { redirect_uri: string; response_mode: 'query' | 'form_post'; state?: string },
  ): Outcome {
    return this.#redirect(target, { error, error_description: description });
  }

  #redirect(
    target: { redirect_uri: string; response_mode: 'query' | 'form_post'; state?: string },
    params: Record<string, string>,
  ): Outcome {
    return {
      kind: 'redirect',
      redirect_uri: target.redirect_uri,
      response_mode: target.response_mode,
      // RFC 9207: the issuer, so a client talking to several servers can tell whose answer this is.
      params: {
        ...params,
        ...(target.state !== undefined ? { state: target.state } : {}),
        iss: this.deps.config.issuer,
      },
    };
  }

  /**
   * grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6): one use, 60 s, the client's,
   * the same redirect URI, the PKCE verifier. A code presented a second time revokes the session
   * its first exchange started (RFC 6749 §4.1.2).
   */
  async exchange(
    client: OAuthClient,
    body: { code?: string; redirect_uri?: string; code_verifier?: string; resource?: string },
  ): Promise<OAuthTokenBundle & { scope: string }> {
    if (!body.code) throw new OAuthError(400, 'invalid_request', 'code is required');
    if (!body.code_verifier || !VERIFIER.test(body.code_verifier))
      throw new OAuthError(400, 'invalid_request', 'code_verifier (PKCE, 43 to 128 characters) is required');
    const now = this.deps.now();
    // The session this exchange starts, named when the code is spent: a replay revokes it.
    const sessionId = randomUUID();
    const found = await this.deps.repository.useCode(sha256(body.code), now, sessionId);
    if (!found) throw invalidGrant('the code is invalid');
    const { code, won } = found;
    if (!won) {
      if (code.issued_session_id) await this.deps.revoke([code.issued_session_id], 'code_replayed');
      throw invalidGrant('the code has been used already; the tokens issued from it are revoked');
    }
    // A metadata document's client id is the same URL at every project: the project counts too.
    if (code.client_id !== client.client_id || code.project_id !== client.project_id)
      throw invalidGrant('the code was issued to another client');
    if (code.expires_at <= now) throw invalidGrant('the code has expired');
    if (body.redirect_uri !== code.redirect_uri)
      throw invalidGrant('redirect_uri is not the one of the authorization request');
    if (!safeEqual(s256(body.code_verifier), code.code_challenge))
      throw invalidGrant('code_verifier does not match the code_challenge');
    if (body.resource !== undefined && body.resource !== code.resource)
      throw new OAuthError(400, 'invalid_target', 'resource is not the one of the authorization request');
    const subject = await this.deps.repository.exchangeSubject(
      code.session_id,
      code.user_id,
      code.project_id,
    );
    const hostedSession = subject?.session;
    if (!hostedSession || hostedSession.revoked_at !== null || hostedSession.expires_at <= now)
      throw invalidGrant('the user has signed out since the code was issued');
    const project = await this.deps.projects.byId(code.project_id);
    if (!project || !subject) throw invalidGrant('the code is invalid');
    const { user } = subject;
    const scopes = code.scope.split(' ');
    const refresh = newRefreshToken();
    const session: Session = {
      id: sessionId,
      project_id: project.id,
      user_id: user.id,
      auth_method: hostedSession.auth_method,
      auth_time: hostedSession.auth_time,
      device_id: null,
      passkey_id: null,
      created_at: now,
      expires_at: now + lifetimesOf(project, this.deps.config).refresh * 1000,
      last_refreshed_at: null,
      revoked_at: null,
      revoked_reason: null,
      client_id: client.client_id,
      scope: code.scope,
      resource: code.resource,
      // The user's browser signed in at the hosted page; the client's backend exchanges the code.
      ip_network: hostedSession.ip_network,
    };
    await this.deps.sessions.store(
      this.deps.sessions.creation(session, { id: refresh.id, secret_hash: sha256(refresh.secret) }),
    );
    const bundle = await this.deps.minter.bundle(project, user, session, refresh.token, subject.claims, {
      clientId: client.client_id,
      identifierType: user.identifier_type,
      ...(code.nonce !== null ? { nonce: code.nonce } : {}),
    });
    return shapeForClient(bundle, scopes);
  }
}
