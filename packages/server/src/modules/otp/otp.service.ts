import { type AuthMethod, ErrorCodes, type OAuthTokenBundle } from '@tessera/core';
import type { Config } from '../../config/index.js';
import { hmac, safeEqual } from '../../crypto/hash.js';
import { randomDigits, randomId, randomUUID } from '../../crypto/random.js';
import type { Project, User } from '../../db/schema.js';
import { badRequest, TesseraError, tooManyRequests } from '../../errors.js';
import type { RateLimiter } from '../../plugins/rate-limiter.js';
import type { TokenService } from '../../tokens/token.service.js';
import type { UsersRepository } from '../users/users.repository.js';
import { type Delivery, DeliveryError } from './delivery/delivery.js';
import { normaliseIdentifier } from './identifier.js';
import type { OtpRepository } from './otp.repository.js';

export interface OtpStarted {
  challenge_id: string;
  channel: 'email' | 'sms';
  expires_in: number;
  resend_after: number;
}

export type SignInResult = { oauth_token: OAuthTokenBundle } | { user_id: string; auth_method: AuthMethod };

/** Hooks other modules attach to a successful OTP sign-in (e.g. lifting a PIN lock). */
export interface OtpListener {
  sent?(project: Project, channel: 'email' | 'sms'): Promise<void>;
  signedIn?(project: Project, user: User): Promise<void>;
  failed?(project: Project, reason: string): Promise<void>;
}

const CODE = /^\d{6}$/;

/** OTP sign-in: start sends a code, complete checks it and signs the user in. */
export class OtpService {
  constructor(
    private readonly config: Readonly<Config>,
    private readonly repository: OtpRepository,
    private readonly users: UsersRepository,
    private readonly tokens: TokenService,
    private readonly limiter: RateLimiter,
    private readonly delivery: Delivery,
    private readonly codeKey: Buffer,
    private readonly listener: OtpListener = {},
    private readonly now: () => number = Date.now,
  ) {}

  async start(project: Project, rawIdentifier: string): Promise<OtpStarted> {
    const identifier = normaliseIdentifier(rawIdentifier);
    const subject = `${project.id}\0${identifier.value}`;
    const { resendInterval, ttl, maxAttempts } = this.config.otp;
    if (resendInterval > 0) {
      const resend = await this.limiter.hit('otp-resend', subject, { limit: 1, window: resendInterval });
      if (!resend.allowed) {
        throw tooManyRequests(
          'a code was sent moments ago; wait before asking again',
          resend.retryAfter,
          ErrorCodes.resendTooSoon,
        );
      }
    }
    const perIdentifier = await this.limiter.hit(
      'otp-start',
      subject,
      this.config.rateLimits.otpStartPerIdentifier,
    );
    if (!perIdentifier.allowed) {
      throw tooManyRequests('too many codes were requested for this identifier', perIdentifier.retryAfter);
    }
    const id = randomId('otp');
    const code = randomDigits(6);
    const now = this.now();
    await this.repository.insert({
      id,
      project_id: project.id,
      identifier: identifier.value,
      channel: identifier.channel,
      code_hash: hmac(this.codeKey, id, code),
      max_attempts: maxAttempts,
      created_at: now,
      expires_at: now + ttl * 1000,
      consumed_at: null,
    });
    try {
      await this.delivery.send({
        to: identifier.value,
        channel: identifier.channel,
        code,
        projectName: project.name,
        expiresInSeconds: ttl,
      });
    } catch (error) {
      await this.repository.consume(id, now);
      await this.limiter.refund('otp-resend', subject);
      await this.limiter.refund('otp-start', subject);
      const detail = `the ${identifier.channel === 'sms' ? 'SMS' : 'e-mail'} could not be sent; try again later`;
      throw new TesseraError(503, ErrorCodes.deliveryFailed, detail, {
        cause: error instanceof DeliveryError ? error.message : 'delivery failed',
      });
    }
    await this.listener.sent?.(project, identifier.channel);
    return { challenge_id: id, channel: identifier.channel, expires_in: ttl, resend_after: resendInterval };
  }

  async complete(
    project: Project,
    challengeId: string,
    code: string,
    getOAuthToken: boolean,
  ): Promise<SignInResult> {
    if (!CODE.test(code))
      throw badRequest('code must be the 6 digits that were sent', ErrorCodes.invalidCode);
    const now = this.now();
    const challenge = await this.repository.find(project.id, challengeId);
    if (!challenge)
      throw badRequest('no such sign-in challenge for this project', ErrorCodes.challengeNotFound);
    const subject = `${project.id}\0${challenge.identifier}`;
    // The identifier's own guess budget spans all its challenges: a new code does not reset it.
    const budget = await this.limiter.hit(
      'otp-guess',
      subject,
      this.config.rateLimits.otpGuessesPerIdentifier,
    );
    if (!budget.allowed) {
      await this.listener.failed?.(project, 'identifier_locked');
      throw tooManyRequests(
        'too many wrong codes for this identifier; try again later',
        budget.retryAfter,
        ErrorCodes.tooManyAttempts,
      );
    }
    const attempt = await this.repository.reserveAttempt(project.id, challengeId, now);
    if (!attempt) {
      await this.limiter.refund('otp-guess', subject);
      // Read again: a parallel request may have used the challenge since the first read.
      const current = (await this.repository.find(project.id, challengeId)) ?? challenge;
      if (current.consumed_at !== null)
        throw badRequest('this code has already been used', ErrorCodes.challengeUsed);
      if (current.expires_at <= now)
        throw badRequest('this code has expired; ask for a new one', ErrorCodes.challengeExpired);
      throw new TesseraError(429, ErrorCodes.tooManyAttempts, 'too many wrong codes; ask for a new one');
    }
    if (!safeEqual(hmac(this.codeKey, challengeId, code), attempt.code_hash)) {
      await this.listener.failed?.(project, 'invalid_code');
      const left = attempt.max_attempts - attempt.attempts;
      throw new TesseraError(
        400,
        ErrorCodes.invalidCode,
        left > 0
          ? `the code is not correct; ${left} attempt${left === 1 ? '' : 's'} left`
          : 'the code is not correct; ask for a new one',
        { extensions: { attempts_left: left } },
      );
    }
    if (!(await this.repository.consume(challengeId, now))) {
      throw badRequest('this code has already been used', ErrorCodes.challengeUsed);
    }
    await this.limiter.refund('otp-guess', subject);
    const user = await this.users.signIn({
      id: randomUUID(),
      project_id: project.id,
      identifier: attempt.identifier,
      identifier_type: attempt.channel === 'sms' ? 'phone' : 'email',
      client_user_id: null,
      created_at: now,
      last_sign_in_at: now,
    });
    await this.listener.signedIn?.(project, user);
    if (!getOAuthToken) return { user_id: user.id, auth_method: 'OTP' };
    return { oauth_token: await this.tokens.startSession(project, user, 'OTP') };
  }
}
