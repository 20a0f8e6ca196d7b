import type { LocalDeviceStore } from '../device/local-device.js';
import {
  type ClientContext,
  callAsUser,
  completeSignIn,
  type SignInOptions,
  type SignInResult,
} from './context.js';
import { deviceChallenge } from './devices.js';

/**
 * PIN sign-in: knowledge (the PIN) plus possession (this trusted device's key). Five wrong PINs
 * lock PIN sign-in until the user signs in by OTP.
 *
 * @example
 * ```ts
 * await tessera.devices.register();   // once, while signed in
 * await tessera.pin.set('4829');        // while signed in
 * await tessera.pin.signIn('4829');     // later
 * ```
 */
/**
 * Whether the signed-in user has a PIN, from {@link PinMethods.status}.
 *
 * @example
 * ```ts
 * const { pinSet, locked } = await tessera.pin.status();
 * ```
 */
export interface PinStatus {
  pinSet: boolean;
  /** Five wrong PINs: PIN sign-in is refused until the user signs in by OTP. */
  locked: boolean;
  /** Wrong PINs before the lock: 5 for a PIN just set, and when no PIN is set. */
  attemptsLeft: number;
}

export interface PinMethods {
  /** Whether the signed-in user has set a PIN, and whether PIN sign-in is locked. */
  status(): Promise<PinStatus>;
  /** Sets or changes the PIN. Changing it needs `currentPin` unless the user signed in within ten minutes. */
  set(pin: string, currentPin?: string): Promise<void>;
  /** Signs in with the PIN and this device's key (`no_device_key` when there is none). */
  signIn(pin: string, options?: SignInOptions): Promise<SignInResult>;
}

export function pinMethods(ctx: ClientContext, local: LocalDeviceStore): PinMethods {
  return {
    async status() {
      const answer = await callAsUser<{ pin_set: boolean; locked: boolean; attempts_left: number }>(
        ctx,
        '/v1/pin',
        { method: 'GET' },
      );
      return { pinSet: answer.pin_set, locked: answer.locked, attemptsLeft: answer.attempts_left };
    },
    async set(pin, currentPin) {
      await callAsUser(ctx, '/v1/pin', {
        method: 'PUT',
        body: { pin, ...(currentPin !== undefined && { current_pin: currentPin }) },
      });
    },
    async signIn(pin, options = {}) {
      const started = await deviceChallenge(ctx, local, '/v1/auth/pin/start');
      const signature = await started.sign('pin-signin');
      return completeSignIn(
        ctx,
        '/v1/auth/pin/complete',
        { challenge_id: started.challenge_id, signature, pin },
        options,
      );
    },
  };
}
