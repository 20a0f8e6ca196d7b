import { ErrorCodes } from '@tessera/core';
import { TesseraError } from '../../errors.js';
import type { Authenticated } from '../../plugins/bearer.js';
import type { SessionRepository } from '../session/session.repository.js';

/** A sign-in counts as recent for this long after it happened (not after the last refresh). */
export const RECENT_SIGN_IN_MS = 10 * 60 * 1000;

/**
 * Sign-in methods that prove more than a stolen access token or the device itself: a fresh
 * one-time code or a user-verified passkey. A TRUSTED DEVICE or PIN session proves only the device
 * (and what the PIN adds), which is the very credential enrolment would add to.
 */
export const STRONG_METHODS: ReadonlySet<string> = new Set(['OTP', 'BIOMETRIC']);

/**
 * Step-up checks for actions that add lasting access (a trusted device, a passkey, a first PIN)
 * or replace a credential: an access token alone — stolen, say — must not become a credential
 * that outlives it.
 */
export class StepUp {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** The method of the caller's sign-in when it happened within the last ten minutes. */
  async recentMethod(auth: Authenticated): Promise<string | undefined> {
    const session = await this.sessions.findById(auth.claims.sid);
    return session && this.now() - session.auth_time <= RECENT_SIGN_IN_MS ? session.auth_method : undefined;
  }

  /** Throws `403 reauthentication_required` unless the caller signed in by OTP or passkey recently. */
  async requireRecentStrongSignIn(auth: Authenticated, action: string): Promise<void> {
    const method = await this.recentMethod(auth);
    if (method !== undefined && STRONG_METHODS.has(method)) return;
    throw new TesseraError(
      403,
      ErrorCodes.reauthenticationRequired,
      `sign in again with a one-time code or a passkey (within the last 10 minutes) to ${action}`,
    );
  }
}
