import { ErrorCodes, type SignInResult } from '@tessera/core';
import type { Selectable } from 'kysely';
import type { PinTable } from '../../db/schema.js';
import { badRequest, TesseraError } from '../../errors.js';
import type { ClientNetwork } from '../../net/client-network.js';
import type { Authenticated } from '../../plugins/bearer.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { DeviceService } from '../device/device.service.js';
import type { Project } from '../projects/project.js';
import type { SecurityNotices } from '../sign-in/security-notices.js';
import type { SignInService } from '../sign-in/sign-in.service.js';
import { STRONG_METHODS, type StepUp } from '../sign-in/step-up.js';
import { MAX_PIN_ATTEMPTS, type PinRepository } from './pin.repository.js';
import { hashPin, verifyPin, weakPinReason } from './pin-hash.js';

/**
 * Sign-in methods whose recent session may stand in for the current PIN (the strong methods):
 * a TRUSTED DEVICE session proves only the device (the very thing PIN sign-in already needs), and
 * a PIN session is no stronger than the PIN it replaces.
 */
const METHODS_REPLACING_CURRENT_PIN = STRONG_METHODS;

/** A locked PIN is set again or removed only after the OTP sign-in that unlocks it. */
const METHOD_CLEARING_LOCK = 'OTP';

type PinRow = Selectable<PinTable>;

const isLocked = (row: PinRow) => row.failed_attempts >= MAX_PIN_ATTEMPTS || row.locked_at !== null;

const lockedError = (action: 'change' | 'remove') =>
  new TesseraError(
    423,
    ErrorCodes.pinLocked,
    `the PIN is locked after too many wrong PINs; sign in with a one-time code to unlock it, then ${action} it`,
  );

/** PIN: knowledge on a trusted device. Set while signed in; used with a device signature. */
export class PinService {
  constructor(
    private readonly repository: PinRepository,
    private readonly stepUp: StepUp,
    private readonly devices: DeviceService,
    private readonly signInService: SignInService,
    private readonly audit: AuditLog,
    private readonly pepper: Buffer,
    private readonly notices: SecurityNotices,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Who may replace or remove an existing PIN:
   * - while it is locked, only a session started by OTP within the last ten minutes (the same
   *   proof that lifts the lock at sign-in); no device, PIN or passkey session, with or
   *   without `current_pin`, clears a lock;
   * - otherwise, the holder of the current PIN, or a session started by OTP or BIOMETRIC within
   *   the last ten minutes. A TRUSTED DEVICE or PIN session must give the current PIN.
   *
   * A current PIN spends an attempt like a PIN sign-in does: otherwise this would be a way to
   * guess the PIN without ever meeting the lock. The answer says whether the lock may be cleared.
   */
  async #requireReauthentication(
    auth: Authenticated,
    existing: PinRow,
    currentPin: string | undefined,
    action: 'change' | 'remove',
  ): Promise<{ clearLock: boolean }> {
    const recentMethod = await this.stepUp.recentMethod(auth);
    if (isLocked(existing)) {
      if (recentMethod === METHOD_CLEARING_LOCK) return { clearLock: true };
      throw lockedError(action);
    }
    if (currentPin !== undefined) {
      const attempt = await this.repository.reserveAttempt(auth.user.id);
      if (!attempt) throw lockedError(action);
      if (!/^\d{4,12}$/.test(currentPin) || !(await verifyPin(this.pepper, currentPin, attempt.hash))) {
        const left = MAX_PIN_ATTEMPTS - attempt.failed_attempts;
        if (left <= 0) {
          if (await this.repository.lock(auth.user.id, this.now())) {
            await this.audit.record({ projectId: auth.project.id, userId: auth.user.id, type: 'pin.locked' });
          }
          throw new TesseraError(
            423,
            ErrorCodes.pinLocked,
            'the current PIN is not correct; the PIN is now locked until you sign in with a one-time code',
          );
        }
        throw new TesseraError(
          403,
          ErrorCodes.invalidPin,
          `the current PIN is not correct; ${left} attempt${left === 1 ? '' : 's'} left`,
          { extensions: { attempts_left: left } },
        );
      }
      await this.repository.reset(auth.user.id);
      return { clearLock: false };
    }
    if (recentMethod === undefined) {
      throw new TesseraError(
        403,
        ErrorCodes.reauthenticationRequired,
        `send current_pin, or sign in again with a one-time code or a passkey, to ${action} the PIN`,
      );
    }
    if (!METHODS_REPLACING_CURRENT_PIN.has(recentMethod)) {
      throw new TesseraError(
        403,
        ErrorCodes.reauthenticationRequired,
        `a ${recentMethod} sign-in does not replace the current PIN; send current_pin, or sign in with a one-time code or a passkey, to ${action} the PIN`,
      );
    }
    return { clearLock: false };
  }

  async set(auth: Authenticated, pin: string, currentPin?: string): Promise<{ pin_set: true }> {
    const weak = weakPinReason(pin);
    if (weak) throw badRequest(weak, ErrorCodes.weakPin);
    const existing = await this.repository.find(auth.user.id);
    // A first PIN adds a credential: it needs the same recent strong sign-in as a new device.
    if (!existing) await this.stepUp.requireRecentStrongSignIn(auth, 'set a PIN');
    const { clearLock } = existing
      ? await this.#requireReauthentication(auth, existing, currentPin, 'change')
      : { clearLock: false };
    // Guesses racing this request may have locked the PIN since it was read: the write keeps
    // such a lock unless a recent OTP sign-in allows clearing it.
    const stored = await this.repository.upsert(auth.user.id, await hashPin(this.pepper, pin), this.now(), {
      clearLock,
    });
    if (!stored) throw lockedError('change');
    await this.audit.record({
      projectId: auth.project.id,
      userId: auth.user.id,
      type: existing ? 'pin.changed' : 'pin.set',
    });
    await this.notices.enrolled(auth.project, auth.user, existing ? 'pin.changed' : 'pin.set');
    return { pin_set: true };
  }

  async remove(auth: Authenticated, currentPin?: string): Promise<void> {
    const existing = await this.repository.find(auth.user.id);
    if (!existing) throw badRequest('no PIN is set', ErrorCodes.pinNotSet);
    const { clearLock } = await this.#requireReauthentication(auth, existing, currentPin, 'remove');
    if (!(await this.repository.remove(auth.user.id, { clearLock }))) {
      if (await this.repository.find(auth.user.id)) throw lockedError('remove');
      throw badRequest('no PIN is set', ErrorCodes.pinNotSet);
    }
    await this.audit.record({ projectId: auth.project.id, userId: auth.user.id, type: 'pin.removed' });
  }

  async status(userId: string): Promise<{ pin_set: boolean; locked: boolean; attempts_left: number }> {
    const row = await this.repository.find(userId);
    // No PIN: nothing is locked, and a PIN set now starts with every attempt (not 0, which read as
    // "locked" to a client that looks at the number alone).
    if (!row) return { pin_set: false, locked: false, attempts_left: MAX_PIN_ATTEMPTS };
    return {
      pin_set: true,
      locked: row.failed_attempts >= MAX_PIN_ATTEMPTS,
      attempts_left: MAX_PIN_ATTEMPTS - row.failed_attempts,
    };
  }

  /**
   * PIN sign-in: the device's signature first (no PIN attempt is spent on a forged one), then
   * one PIN attempt taken atomically. Five wrong PINs lock PIN sign-in until an OTP sign-in.
   */
  async signIn(
    project: Project,
    input: { challenge_id: string; signature: string; pin: string; getOAuthToken?: boolean },
    network: ClientNetwork,
  ): Promise<SignInResult> {
    const { device, user } = await this.devices.checkSignature(
      project,
      input.challenge_id,
      'pin-signin',
      input.signature,
    );
    const attempt = await this.repository.reserveAttempt(user.id);
    if (!attempt) {
      const stored = await this.repository.find(user.id);
      await this.signInService.recordFailure(project, {
        method: 'PIN',
        reason: stored ? 'pin_locked' : 'pin_not_set',
        userId: user.id,
      });
      if (!stored) throw badRequest('no PIN is set for this user', ErrorCodes.pinNotSet);
      throw new TesseraError(
        423,
        ErrorCodes.pinLocked,
        'PIN sign-in is locked after too many wrong PINs; sign in with a one-time code to unlock it',
      );
    }
    // The format is checked after the attempt is taken, so a malformed PIN costs an attempt too
    // and answers take the same path whatever was sent.
    if (!/^\d{4,12}$/.test(input.pin) || !(await verifyPin(this.pepper, input.pin, attempt.hash))) {
      const left = MAX_PIN_ATTEMPTS - attempt.failed_attempts;
      await this.signInService.recordFailure(project, {
        method: 'PIN',
        reason: 'invalid_pin',
        userId: user.id,
      });
      if (left <= 0) {
        if (await this.repository.lock(user.id, this.now())) {
          await this.audit.record({ projectId: project.id, userId: user.id, type: 'pin.locked' });
        }
        throw new TesseraError(
          423,
          ErrorCodes.pinLocked,
          'wrong PIN; PIN sign-in is now locked until you sign in with a one-time code',
        );
      }
      throw new TesseraError(
        401,
        ErrorCodes.invalidPin,
        `wrong PIN; ${left} attempt${left === 1 ? '' : 's'} left`,
        { extensions: { attempts_left: left } },
      );
    }
    await this.repository.reset(user.id);
    return this.devices.finish(project, user, device, 'PIN', input.getOAuthToken === true, network);
  }
}
