import type { OtpStarted } from '@tessera/core';
import { type ClientContext, completeSignIn, type SignInOptions, type SignInResult } from './context.js';

/**
 * A started OTP sign-in.
 *
 * @example
 * ```ts
 * const { challengeId, channel, resendAfter } = await tessera.otp.start('ada@example.com');
 * ```
 */
export interface OtpChallenge {
  challengeId: string;
  /** How the code was sent: `email` or `sms`. */
  channel: string;
  /** Seconds the code stays valid. */
  expiresIn: number;
  /** Seconds before another code may be requested. */
  resendAfter: number;
}

/**
 * Sign-in by one-time code sent to an e-mail address or phone number.
 *
 * @example
 * ```ts
 * const { challengeId } = await tessera.otp.start('ada@example.com');
 * await tessera.otp.complete(challengeId, '123456'); // tokens stored, 'signedIn' emitted
 * ```
 */
export interface OtpMethods {
  /** Sends a code. The answer is the same whether or not the user exists. */
  start(identifier: string): Promise<OtpChallenge>;
  /** Checks the code; a first success creates the user. */
  complete(challengeId: string, code: string, options?: SignInOptions): Promise<SignInResult>;
}

export function otpMethods(ctx: ClientContext): OtpMethods {
  return {
    async start(identifier) {
      const answer = await ctx.transport.call<OtpStarted>('/v1/auth/otp/start', { body: { identifier } });
      return {
        challengeId: answer.challenge_id,
        channel: answer.channel,
        expiresIn: answer.expires_in,
        resendAfter: answer.resend_after,
      };
    },
    async complete(challengeId, code, options = {}) {
      return completeSignIn(ctx, '/v1/auth/otp/complete', { challenge_id: challengeId, code }, options);
    },
  };
}
