import type { Transaction, UpdateQueryBuilder, UpdateResult } from 'kysely';
import type { Db } from '../../db/connect.js';
import { prepared } from '../../db/prepared.js';
import type { Database, NewSession, Session, User } from '../../db/schema.js';

export interface RefreshTokenRow {
  id: string;
  session_id: string;
  secret_hash: string;
  expires_at: number;
  rotated_at: number | null;
  successor_enc: string | null;
}

const refreshContext = prepared((db, tokenId: string) =>
  db
    .selectFrom('refresh_tokens as t')
    .innerJoin('sessions as s', 's.id', 't.session_id')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .leftJoin('user_claims as c', (join) =>
      join.onRef('c.user_id', '=', 'u.id').onRef('c.project_id', '=', 's.project_id'),
    )
    .select([
      't.secret_hash',
      't.expires_at as t_expires_at',
      't.rotated_at',
      't.successor_enc',
      's.id as s_id',
      's.project_id',
      's.user_id',
      's.auth_method',
      's.auth_time',
      's.device_id',
      's.created_at as s_created_at',
      's.expires_at as s_expires_at',
      's.last_refreshed_at',
      's.revoked_at',
      's.revoked_reason',
      'u.identifier',
      'u.identifier_type',
      'u.client_user_id',
      'u.created_at as u_created_at',
      'u.last_sign_in_at',
      'c.claims',
    ])
    .where('t.id', '=', tokenId),
);

const markRotated = prepared((db, oldId: string, now: number, successorEnc: string) =>
  db
    .updateTable('refresh_tokens')
    .set({ rotated_at: now, successor_enc: successorEnc })
    .where('id', '=', oldId)
    .where('rotated_at', 'is', null),
);

const insertRefreshToken = prepared(
  (db, id: string, sessionId: string, secretHash: string, createdAt: number, expiresAt: number) =>
    db.insertInto('refresh_tokens').values({
      id,
      session_id: sessionId,
      secret_hash: secretHash,
      created_at: createdAt,
      expires_at: expiresAt,
      rotated_at: null,
      successor_enc: null,
    }),
);

const touchSession = prepared((db, id: string, now: number) =>
  db.updateTable('sessions').set({ last_refreshed_at: now }).where('id', '=', id),
);

export class SessionRepository {
  constructor(private readonly db: Db) {}

  /** Inserts a session with its first refresh token, atomically. */
  async create(session: NewSession, token: { id: string; secret_hash: string }): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('sessions').values(session).execute();
      await insertRefreshToken(
        trx,
        token.id,
        session.id,
        token.secret_hash,
        session.created_at,
        session.expires_at,
      );
    });
  }

  findById(id: string): Promise<Session | undefined> {
    return this.db.kysely.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findRefreshToken(id: string): Promise<RefreshTokenRow | undefined> {
    return this.db.kysely
      .selectFrom('refresh_tokens')
      .select(['id', 'session_id', 'secret_hash', 'expires_at', 'rotated_at', 'successor_enc'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /**
   * Everything a refresh grant needs in one read: the token, its session, the session's user and
   * the user's custom claims (JSON, or null when none).
   */
  async findForRefresh(
    tokenId: string,
  ): Promise<{ token: RefreshTokenRow; session: Session; user: User; claims: string | null } | undefined> {
    const [r] = (await refreshContext(this.db.kysely, tokenId)).rows;
    if (!r) return undefined;
    return {
      token: {
        id: tokenId,
        session_id: r.s_id,
        secret_hash: r.secret_hash,
        expires_at: r.t_expires_at,
        rotated_at: r.rotated_at,
        successor_enc: r.successor_enc,
      },
      session: {
        id: r.s_id,
        project_id: r.project_id,
        user_id: r.user_id,
        auth_method: r.auth_method,
        auth_time: r.auth_time,
        device_id: r.device_id,
        created_at: r.s_created_at,
        expires_at: r.s_expires_at,
        last_refreshed_at: r.last_refreshed_at,
        revoked_at: r.revoked_at,
        revoked_reason: r.revoked_reason,
      },
      user: {
        id: r.user_id,
        project_id: r.project_id,
        identifier: r.identifier,
        identifier_type: r.identifier_type,
        client_user_id: r.client_user_id,
        created_at: r.u_created_at,
        last_sign_in_at: r.last_sign_in_at,
      },
      claims: r.claims,
    };
  }

  /**
   * Rotates a refresh token: marks the old one used and stores its successor, in one
   * transaction. The conditional update makes exactly one of several concurrent callers (in
   * any number of processes) the winner; the others get false.
   */
  async rotate(
    oldId: string,
    successor: {
      id: string;
      secret_hash: string;
      successor_enc: string;
      session_id: string;
      expires_at: number;
    },
    now: number,
  ): Promise<boolean> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const updated = await markRotated(trx, oldId, now, successor.successor_enc);
      if (!updated.numAffectedRows) return false;
      await insertRefreshToken(
        trx,
        successor.id,
        successor.session_id,
        successor.secret_hash,
        now,
        successor.expires_at,
      );
      await touchSession(trx, successor.session_id, now);
      return true;
    });
  }

  /** Revokes a session (idempotent: the first reason and time stay). */
  async revoke(id: string, reason: string, now: number): Promise<boolean> {
    return (await this.revokeWhere((q) => q.where('id', '=', id), reason, now)).length > 0;
  }

  /**
   * Revokes every live session the filter selects and records a tombstone for each, in one
   * transaction; returns the ids revoked.
   */
  revokeWhere(
    filter: (
      q: UpdateQueryBuilder<Database, 'sessions', 'sessions', UpdateResult>,
    ) => UpdateQueryBuilder<Database, 'sessions', 'sessions', UpdateResult>,
    reason: string,
    now: number,
    trx?: Transaction<Database>,
  ): Promise<string[]> {
    const run = async (t: Transaction<Database>) => {
      const rows = await filter(t.updateTable('sessions').set({ revoked_at: now, revoked_reason: reason }))
        .where('revoked_at', 'is', null)
        .returning(['id', 'project_id'])
        .execute();
      if (rows.length > 0) {
        await t
          .insertInto('session_revocations')
          .values(rows.map((r) => ({ session_id: r.id, project_id: r.project_id, revoked_at: now })))
          .onConflict((oc) => oc.column('session_id').doNothing())
          .execute();
      }
      return rows.map((r) => r.id);
    };
    return trx ? run(trx) : this.db.kysely.transaction().execute(run);
  }

  listByUser(userId: string, includeRevoked = false): Promise<Session[]> {
    let query = this.db.kysely.selectFrom('sessions').selectAll().where('user_id', '=', userId);
    if (!includeRevoked) query = query.where('revoked_at', 'is', null);
    return query.orderBy('created_at', 'desc').execute();
  }

  /** Sessions revoked at or after `since` (for the revocation list). */
  revokedSince(since: number): Promise<Array<{ id: string; revoked_at: number }>> {
    return this.db.kysely
      .selectFrom('session_revocations')
      .select(['session_id as id', 'revoked_at'])
      .where('revoked_at', '>=', since)
      .execute();
  }

  /** Deletes sessions (and, by cascade, their refresh tokens) that ended before `before`. */
  async pruneExpired(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('sessions').where('expires_at', '<', before).execute();
  }

  /** Drops tombstones older than any access token could be. */
  async pruneRevocations(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('session_revocations').where('revoked_at', '<', before).execute();
  }
}
