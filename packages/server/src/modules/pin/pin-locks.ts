import type { AuditLog } from '../audit/audit.service.js';
import {
  type PinLocks as PinLocksPort,
  type PinStatus,
  pinUnlockedEvent,
} from '../sign-in/sign-in.service.js';
import { MAX_PIN_ATTEMPTS, type PinRepository } from './pin.repository.js';

/** The PIN lock as the sign-in rules use it: an OTP sign-in lifts it, a lock stops device sign-in. */
export class PinLocks implements PinLocksPort {
  constructor(
    private readonly repository: PinRepository,
    private readonly audit: AuditLog,
  ) {}

  async #status(userId: string): Promise<PinStatus | null> {
    const row = await this.repository.find(userId);
    return row ? { failedAttempts: row.failed_attempts, locked: row.locked_at !== null } : null;
  }

  async state(userId: string): Promise<'none' | 'set' | 'locked'> {
    const row = await this.repository.find(userId);
    if (!row) return 'none';
    return row.failed_attempts >= MAX_PIN_ATTEMPTS || row.locked_at !== null ? 'locked' : 'set';
  }

  /**
   * The integrator's (or a console member's) unlock: the count of failed attempts starts again and
   * the lock goes; `pin.unlocked` (by `integrator`) is recorded when it was locked. Whether it was.
   */
  async unlockByIntegrator(projectId: string, userId: string): Promise<boolean> {
    const pin = await this.#status(userId);
    const locked = pin !== null && (pin.locked || pin.failedAttempts >= MAX_PIN_ATTEMPTS);
    if (pin && pin.failedAttempts > 0 && (await this.repository.reset(userId)) && locked) {
      await this.audit.record({ projectId, userId, type: 'pin.unlocked', data: { by: 'integrator' } });
      return true;
    }
    return false;
  }

  async unlock(projectId: string, userId: string, known?: PinStatus | null): Promise<void> {
    const pin = known === undefined ? await this.#status(userId) : known;
    if (pin && pin.failedAttempts > 0 && (await this.repository.reset(userId)) && pin.locked) {
      await this.audit.record(pinUnlockedEvent(projectId, userId));
    }
  }
}
