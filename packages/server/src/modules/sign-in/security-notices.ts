import type { User } from '../../db/schema.js';
import type { NoticeEvent } from '../otp/delivery/delivery.js';
import type { Delivery } from '../otp/delivery/index.js';
import type { Project } from '../projects/project.js';

/**
 * Tells a user, on the channel they sign in with, that a credential was added to their account or
 * that it was signed out everywhere, so a stranger's enrolment does not go unnoticed. Best effort:
 * a notice that cannot be sent is logged and never fails the action (the audit event and its
 * webhook are the integrator's record). Off with TESSERA_SECURITY_NOTICES=false.
 */
export class SecurityNotices {
  constructor(
    private readonly delivery: Pick<Delivery, 'notify'>,
    private readonly enabled: boolean,
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  async enrolled(project: Project, user: User, event: NoticeEvent): Promise<void> {
    if (!this.enabled) return;
    try {
      await this.delivery.notify({
        to: user.identifier,
        channel: user.identifier_type === 'phone' ? 'sms' : 'email',
        projectName: project.name,
        event,
        at: new Date(this.now()),
      });
    } catch (error) {
      this.onError(error);
    }
  }
}
