import { ErrorCodes } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import type { Project, Session, User } from '../../db/schema.js';
import { badRequest, notFound } from '../../errors.js';
import type { AuditLog } from '../audit/audit.service.js';
import { normaliseIdentifier } from '../otp/identifier.js';
import type { SessionRepository } from '../session/session.repository.js';
import type { UsersRepository } from './users.repository.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function userView(user: User) {
  return {
    user_id: user.id,
    identifier: user.identifier,
    identifier_type: user.identifier_type,
    client_user_id: user.client_user_id,
    created_at: iso(user.created_at),
    last_sign_in_at: iso(user.last_sign_in_at),
  };
}

export function sessionView(session: Session) {
  return {
    session_id: session.id,
    auth_method: session.auth_method,
    device_id: session.device_id,
    created_at: iso(session.created_at),
    last_refreshed_at: iso(session.last_refreshed_at),
    expires_at: iso(session.expires_at),
    revoked_at: iso(session.revoked_at),
  };
}

/** The integrator's view of its users: lookup, client_user_id, erasure, sessions. */
export class UsersService {
  constructor(
    private readonly db: Db,
    private readonly users: UsersRepository,
    private readonly sessions: SessionRepository,
    private readonly audit: AuditLog,
    private readonly onSessionsRevoked: (ids: string[]) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A user of this project, or 404 (another project's user is as unknown as a missing one). */
  async require(project: Project, userId: string): Promise<User> {
    const user = await this.users.findById(userId);
    if (!user || user.project_id !== project.id)
      throw notFound('no such user in this project', ErrorCodes.userNotFound);
    return user;
  }

  async byIdentifier(project: Project, identifier: string): Promise<User> {
    const user = await this.users.findByIdentifier(project.id, normaliseIdentifier(identifier).value);
    if (!user) throw notFound('no user with this identifier in this project', ErrorCodes.userNotFound);
    return user;
  }

  async setClientUserId(project: Project, userId: string, clientUserId: string | null): Promise<User> {
    const user = await this.require(project, userId);
    if (clientUserId !== null && (clientUserId.trim() === '' || clientUserId.length > 255)) {
      throw badRequest('client_user_id must be 1 to 255 characters, or null to clear it');
    }
    await this.db.kysely
      .updateTable('users')
      .set({ client_user_id: clientUserId })
      .where('id', '=', user.id)
      .execute();
    await this.audit.record({
      projectId: project.id,
      userId: user.id,
      type: 'user.updated',
      data: { field: 'client_user_id' },
    });
    return { ...user, client_user_id: clientUserId };
  }

  /**
   * Erases a user: identifier, PIN, devices, passkeys, claims and sessions go (foreign keys
   * cascade), and so do its one-time-code challenges; the sessions are revoked first so their
   * access tokens fail /verify at once.
   * Audit entries stay, keyed by the now meaningless user id, without personal data.
   */
  async remove(project: Project, userId: string): Promise<void> {
    const user = await this.require(project, userId);
    const revoked = await this.db.kysely.transaction().execute(async (trx) => {
      const ids = await this.sessions.revokeWhere(
        (q) => q.where('user_id', '=', user.id),
        'user_deleted',
        this.now(),
        trx,
      );
      await trx.deleteFrom('users').where('id', '=', user.id).execute();
      // Sign-in challenges name the identifier in clear and have no foreign key to the user.
      await trx
        .deleteFrom('otp_challenges')
        .where('project_id', '=', project.id)
        .where('identifier', '=', user.identifier)
        .execute();
      return ids;
    });
    this.onSessionsRevoked(revoked);
    await this.audit.record({
      projectId: project.id,
      userId: user.id,
      type: 'user.deleted',
      data: { sessions_revoked: revoked.length },
    });
  }

  async listSessions(project: Project, userId: string, includeRevoked: boolean) {
    const user = await this.require(project, userId);
    return (await this.sessions.listByUser(user.id, includeRevoked)).map(sessionView);
  }

  /** Revokes one session of the user, or all of them. */
  async revokeSessions(project: Project, userId: string, sessionId?: string): Promise<{ revoked: number }> {
    const user = await this.require(project, userId);
    const ids = await this.sessions.revokeWhere(
      (q) => {
        const mine = q.where('user_id', '=', user.id);
        return sessionId ? mine.where('id', '=', sessionId) : mine;
      },
      'revoked_by_integrator',
      this.now(),
    );
    if (sessionId && ids.length === 0) {
      const existing = await this.sessions.findById(sessionId);
      if (!existing || existing.user_id !== user.id)
        throw notFound('no such session for this user', ErrorCodes.sessionNotFound);
    }
    this.onSessionsRevoked(ids);
    for (const id of ids)
      await this.audit.record({
        projectId: project.id,
        userId: user.id,
        type: 'session.revoked',
        data: { session_id: id, by: 'integrator' },
      });
    return { revoked: ids.length };
  }
}
