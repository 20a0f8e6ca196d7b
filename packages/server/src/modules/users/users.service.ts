import { ErrorCodes } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import type { Session, User } from '../../db/schema.js';
import { badRequest, notFound } from '../../errors.js';
import type { AuditLog } from '../audit/audit.service.js';
import { normaliseIdentifier } from '../otp/identifier.js';
import type { Project } from '../projects/project.js';
import { revokeSession, revokeUserSessions, type SessionRepository } from '../session/session.repository.js';
import type { SignOutService } from '../session/sign-out.service.js';
import { clientUserIdOf } from './client-user-id.js';
import type { UsersRepository } from './users.repository.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function userView(user: User) {
  return {
    user_id: user.id,
    identifier: user.identifier,
    identifier_type: user.identifier_type,
    client_user_id: clientUserIdOf(user),
    created_at: iso(user.created_at),
    last_sign_in_at: iso(user.last_sign_in_at),
  };
}

export function sessionView(session: Session) {
  return {
    session_id: session.id,
    auth_method: session.auth_method,
    device_id: session.device_id,
    client_id: session.client_id ?? null,
    ip_network: session.ip_network ?? null,
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
    private readonly signOut: SignOutService,
    private readonly now: () => number = Date.now,
  ) {}

  /** A user of this project, or 404 (another project's user is as unknown as a missing one). */
  async require(project: Project, userId: string): Promise<User> {
    const user = await this.users.findById(userId);
    if (!user || user.project_id !== project.id)
      throw notFound('no such user in this project', ErrorCodes.userNotFound);
    return user;
  }

  /** The console's search (issue 33): by identifier prefix, user id or client_user_id. */
  search(project: Project, query: string, limit: number): Promise<User[]> {
    return this.users.search(project.id, query, limit);
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
    await this.users.setClientUserId(user.id, clientUserId);
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
      const ids = await revokeUserSessions(trx, user.id, 'user_deleted', this.now());
      await this.users.erase(trx, user);
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

  /** Revokes one session of the user, or all of them (and, when asked, forgets its trusted devices). */
  async revokeSessions(
    project: Project,
    userId: string,
    sessionId?: string,
    options: { forgetDevices?: boolean } = {},
  ): Promise<{ revoked: number; devices_forgotten?: number }> {
    const user = await this.require(project, userId);
    if (!sessionId) {
      const done = await this.signOut.signOut(project, user, {
        scope: 'global',
        forgetDevices: options.forgetDevices === true,
        by: 'integrator',
      });
      return {
        revoked: done.sessions_revoked,
        ...(options.forgetDevices ? { devices_forgotten: done.devices_forgotten } : {}),
      };
    }
    const existing = await this.sessions.findById(sessionId);
    if (!existing || existing.user_id !== user.id)
      throw notFound('no such session for this user', ErrorCodes.sessionNotFound);
    const ids = await revokeSession(this.db.kysely, sessionId, 'revoked_by_integrator', this.now());
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
