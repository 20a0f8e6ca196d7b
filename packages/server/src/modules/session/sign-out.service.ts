import type { Db } from '../../db/connect.js';
import type { User } from '../../db/schema.js';
import type { AuditLog } from '../audit/audit.service.js';
import { removeUserDevices } from '../device/device.repository.js';
import type { Project } from '../projects/project.js';
import type { SecurityNotices } from '../sign-in/security-notices.js';
import { revokeUserSessions } from './session.repository.js';
import type { RevokedBy, SessionService } from './session.service.js';

export interface SignOutOptions {
  /** `global`: every session of the user; `others`: all but `currentSessionId`. */
  scope: 'global' | 'others';
  /** The caller's own session (kept by `others`). */
  currentSessionId?: string;
  /** Also forget the user's trusted devices: they can no longer sign in (nor with the PIN). */
  forgetDevices: boolean;
  by: RevokedBy;
}

export interface SignOutResult {
  sessions_revoked: number;
  devices_forgotten: number;
}

/**
 * Sign out everywhere: ends the user's sessions (all, or all but the caller's) and, when asked,
 * forgets the trusted devices too — the answer to "someone has my account on a device I do not
 * have", which revoking sessions alone does not give (a device signs in again). One transaction.
 */
export class SignOutService {
  constructor(
    private readonly deps: {
      db: Db;
      sessions: SessionService;
      audit: AuditLog;
      notices: SecurityNotices;
      now: () => number;
    },
  ) {}

  async signOut(project: Project, user: User, options: SignOutOptions): Promise<SignOutResult> {
    const now = this.deps.now();
    const reason = options.by === 'integrator' ? 'revoked_by_integrator' : 'signed_out_everywhere';
    const except = options.scope === 'others' ? options.currentSessionId : undefined;
    const { sessions, devices } = await this.deps.db.kysely.transaction().execute(async (trx) => ({
      sessions: await revokeUserSessions(trx, user.id, reason, now, except),
      devices: options.forgetDevices ? await removeUserDevices(trx, user.id) : [],
    }));
    this.deps.sessions.ended(sessions);
    for (const id of sessions)
      await this.deps.audit.record({
        projectId: project.id,
        userId: user.id,
        type: 'session.revoked',
        data: { session_id: id, by: options.by },
      });
    for (const id of devices)
      await this.deps.audit.record({
        projectId: project.id,
        userId: user.id,
        type: 'device.removed',
        data: { device_id: id, sessions_revoked: 0 },
      });
    if (options.forgetDevices || options.scope === 'global')
      await this.deps.notices.enrolled(project, user, 'signed_out_everywhere');
    return { sessions_revoked: sessions.length, devices_forgotten: devices.length };
  }
}
