import type { Kysely } from 'kysely';
import { prepared } from '../../db/prepared.js';
import type { Database, OAuthBrowserSessionTable, OAuthCodeTable, Session, User } from '../../db/schema.js';
import { type CustomClaims, parseClaims } from '../claims/claims.repository.js';
import type { AuthorizationRequest } from './request.js';

export type StoredCode = OAuthCodeTable;

/** How long a spent or expired code is kept to recognise its replay. */
export const CODE_KEPT_MS = 3_600_000;

/** A pending authorization request (waiting for the user on the hosted pages). */
export interface PendingRequest {
  id: string;
  project_id: string;
  params: AuthorizationRequest;
  browser_hash: string;
  expires_at: number;
}

/** Pending requests, codes, hosted sessions and consents of the authorization code flow. */
export class AuthorizeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insertRequest(request: PendingRequest, now: number): Promise<void> {
    await this.db
      .insertInto('oauth_requests')
      .values({
        id: request.id,
        project_id: request.project_id,
        client_id: request.params.client_id,
        params: JSON.stringify(request.params),
        browser_hash: request.browser_hash,
        created_at: now,
        expires_at: request.expires_at,
      })
      .execute();
  }

  async findRequest(id: string): Promise<PendingRequest | undefined> {
    const row = await this.db
      .selectFrom('oauth_requests')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      id: row.id,
      project_id: row.project_id,
      params: JSON.parse(row.params) as AuthorizationRequest,
      browser_hash: row.browser_hash,
      expires_at: Number(row.expires_at),
    };
  }

  /** Spends a pending request: exactly one caller gets true. */
  async deleteRequest(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('oauth_requests').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async insertCode(code: StoredCode): Promise<void> {
    await this.db.insertInto('oauth_codes').values(code).execute();
  }

  /**
   * Spends a code: one conditional update, so exactly one exchange wins, which also records the
   * session that exchange is about to start (`issuedSessionId`: what a replay revokes). Returns the
   * code row (as it was before, for a replay: `used_at` and the first exchange's session set), or
   * undefined when unknown. The winner's path is one statement; only a loser reads the row.
   */
  async useCode(
    id: string,
    now: number,
    issuedSessionId: string,
  ): Promise<{ code: StoredCode; won: boolean } | undefined> {
    const [spent] = (await spendCode(this.db, now, issuedSessionId, id)).rows;
    if (spent) return { code: numeric(spent), won: true };
    const [row] = (await codeById(this.db, id)).rows;
    return row ? { code: numeric(row), won: false } : undefined;
  }

  /**
   * What a code's exchange reads besides the code, in one statement: the state of the hosted
   * session the code came from, its user, and the user's custom claims in the code's project.
   * Undefined when the session or the user is gone (or they do not belong together).
   */
  async exchangeSubject(
    sessionId: string,
    userId: string,
    projectId: string,
  ): Promise<
    | {
        session: Pick<Session, 'auth_method' | 'auth_time' | 'revoked_at' | 'expires_at' | 'ip_network'>;
        user: User;
        claims: CustomClaims;
      }
    | undefined
  > {
    const [row] = (await subjectOf(this.db, projectId, sessionId, userId)).rows;
    if (!row) return undefined;
    const {
      session_auth_method,
      session_auth_time,
      session_revoked_at,
      session_expires_at,
      session_ip_network,
      claims,
      ...user
    } = row;
    return {
      session: {
        auth_method: session_auth_method,
        auth_time: Number(session_auth_time),
        revoked_at: session_revoked_at === null ? null : Number(session_revoked_at),
        expires_at: Number(session_expires_at),
        ip_network: session_ip_network,
      },
      user,
      claims: parseClaims(claims),
    };
  }

  async insertBrowserSession(row: OAuthBrowserSessionTable): Promise<void> {
    await this.db.insertInto('oauth_browser_sessions').values(row).execute();
  }

  /** A hosted session with its Tessera session's state. */
  async findBrowserSession(id: string) {
    const row = await this.db
      .selectFrom('oauth_browser_sessions as b')
      .innerJoin('sessions as s', 's.id', 'b.session_id')
      .select([
        'b.id',
        'b.secret_hash',
        'b.project_id',
        'b.session_id',
        'b.expires_at',
        'b.ended_at',
        's.user_id',
        's.auth_time',
        's.auth_method',
        's.revoked_at',
        's.expires_at as session_expires_at',
      ])
      .where('b.id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      ...row,
      expires_at: Number(row.expires_at),
      ended_at: row.ended_at === null ? null : Number(row.ended_at),
      auth_time: Number(row.auth_time),
      revoked_at: row.revoked_at === null ? null : Number(row.revoked_at),
      session_expires_at: Number(row.session_expires_at),
    };
  }

  async endBrowserSession(id: string, now: number): Promise<void> {
    await this.db.updateTable('oauth_browser_sessions').set({ ended_at: now }).where('id', '=', id).execute();
  }

  async consent(userId: string, clientId: string): Promise<string[] | undefined> {
    const row = await this.db
      .selectFrom('oauth_consents')
      .select('scope')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row ? row.scope.split(' ').filter(Boolean) : undefined;
  }

  async saveConsent(
    projectId: string,
    userId: string,
    clientId: string,
    scopes: string[],
    now: number,
  ): Promise<void> {
    const scope = scopes.join(' ');
    await this.db
      .insertInto('oauth_consents')
      .values({
        project_id: projectId,
        user_id: userId,
        client_id: clientId,
        scope,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['user_id', 'client_id']).doUpdateSet({ scope, updated_at: now }))
      .execute();
  }

  /** A user's grants; a Client ID Metadata Document's client has no row (its `name` is null). */
  async listConsents(projectId: string, userId: string) {
    const rows = await this.db
      .selectFrom('oauth_consents as g')
      .leftJoin('oauth_clients as c', 'c.client_id', 'g.client_id')
      .select(['g.client_id', 'c.name', 'c.logo_uri', 'g.scope', 'g.created_at', 'g.updated_at'])
      .where('g.project_id', '=', projectId)
      .where('g.user_id', '=', userId)
      .orderBy('g.created_at', 'asc')
      .execute();
    return rows.map((r) => ({ ...r, created_at: Number(r.created_at), updated_at: Number(r.updated_at) }));
  }

  async deleteConsent(projectId: string, userId: string, clientId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('oauth_consents')
      .where('project_id', '=', projectId)
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Housekeeping: pending requests and hosted sessions past their life; codes an hour after theirs
   * (a code presented again within the hour still revokes what its first exchange issued).
   */
  async prune(now: number): Promise<void> {
    await this.db.deleteFrom('oauth_requests').where('expires_at', '<', now).execute();
    await this.db
      .deleteFrom('oauth_codes')
      .where('expires_at', '<', now - CODE_KEPT_MS)
      .execute();
    await this.db.deleteFrom('oauth_browser_sessions').where('expires_at', '<', now).execute();
  }
}

// A code exchange's statements, built and compiled once (db/prepared.ts).
const spendCode = prepared((db, now: number, issuedSessionId: string, id: string) =>
  db
    .updateTable('oauth_codes')
    .set({ used_at: now, issued_session_id: issuedSessionId })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .returningAll(),
);

const codeById = prepared((db, id: string) => db.selectFrom('oauth_codes').selectAll().where('id', '=', id));

const subjectOf = prepared((db, projectId: string, sessionId: string, userId: string) =>
  db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .leftJoin('user_claims as c', (join) =>
      join.onRef('c.user_id', '=', 'u.id').on('c.project_id', '=', projectId),
    )
    .selectAll('u')
    .select([
      's.auth_method as session_auth_method',
      's.auth_time as session_auth_time',
      's.revoked_at as session_revoked_at',
      's.expires_at as session_expires_at',
      's.ip_network as session_ip_network',
      'c.claims',
    ])
    .where('s.id', '=', sessionId)
    .where('u.id', '=', userId),
);

function numeric(row: StoredCode): StoredCode {
  return {
    ...row,
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    used_at: row.used_at === null ? null : Number(row.used_at),
  };
}
