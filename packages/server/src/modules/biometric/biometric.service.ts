import {
  type AuthenticationResponseJSON,
  type AuthenticatorTransportFuture,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { type ErrorCode, ErrorCodes } from '@tessera/core';
import type { RateLimit } from '../../config/index.js';
import type { Challenge, Passkey, Project } from '../../db/schema.js';
import { badRequest, notFound, TesseraError, tooManyRequests } from '../../errors.js';
import type { Authenticated } from '../../plugins/bearer.js';
import type { RateLimiter } from '../../plugins/rate-limiter.js';
import type { TokenService } from '../../tokens/token.service.js';
import type { AuditLog } from '../audit/audit.service.js';
import { ChallengeRefused, type ChallengesService } from '../challenges/challenges.service.js';
import { normaliseIdentifier } from '../otp/identifier.js';
import type { SignInResult } from '../otp/otp.service.js';
import type { UsersRepository } from '../users/users.repository.js';
import type { PasskeyRepository } from './passkey.repository.js';

/** WebAuthn ceremonies get five minutes. */
export const PASSKEY_CHALLENGE_TTL = 300;

export interface PasskeyView {
  passkey_id: string;
  name: string;
  device_type: string;
  backed_up: boolean;
  created_at: string;
  last_used_at: string | null;
}

export function passkeyView(p: Passkey): PasskeyView {
  return {
    passkey_id: p.id,
    name: p.name,
    device_type: p.device_type,
    backed_up: p.backed_up === 1,
    created_at: new Date(p.created_at).toISOString(),
    last_used_at: p.last_used_at === null ? null : new Date(p.last_used_at).toISOString(),
  };
}

const failed = (detail: string, code: ErrorCode = ErrorCodes.passkeyVerificationFailed) =>
  new TesseraError(400, code, detail);

/** The relying party of a project: its id and the origins assertions may come from. */
function relyingParty(project: Project): { rpID: string; origins: string[] } {
  const origins = JSON.parse(project.origins) as string[];
  const rpID = project.rp_id ?? (origins[0] ? new URL(origins[0]).hostname : undefined);
  if (!rpID || origins.length === 0) {
    throw badRequest('this project has no relying-party id or origins for passkeys; configure them first');
  }
  return { rpID, origins };
}

/**
 * The per-user limits of passkey sign-in, the same rules as OTP: starts per identifier
 * (`TESSERA_RATE_LIMIT_OTP_START`) and failed completes per user (`TESSERA_RATE_LIMIT_OTP_GUESSES`).
 * The per-IP limit is the route's.
 */
export interface PasskeySignInLimits {
  limiter: RateLimiter;
  /** Identifier-first starts per identifier and project, whether or not the user exists. */
  starts: RateLimit;
  /** Failed completes per user (a success gives its unit back), discoverable or not. */
  failures: RateLimit;
}

/** BIOMETRIC: WebAuthn passkeys with user verification required. */
export class BiometricService {
  constructor(
    private readonly passkeys: PasskeyRepository,
    private readonly users: UsersRepository,
    private readonly challenges: ChallengesService,
    private readonly tokens: TokenService,
    private readonly audit: AuditLog,
    private readonly limits: PasskeySignInLimits,
    private readonly now: () => number = Date.now,
  ) {}

  async registrationOptions(auth: Authenticated) {
    const { rpID } = relyingParty(auth.project);
    const existing = await this.passkeys.listByUser(auth.user.id);
    const options = await generateRegistrationOptions({
      rpName: auth.project.name,
      rpID,
      userName: auth.user.identifier,
      userID: new TextEncoder().encode(auth.user.id),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({
        id: p.id,
        transports: JSON.parse(p.transports) as AuthenticatorTransportFuture[],
      })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      timeout: PASSKEY_CHALLENGE_TTL * 1000,
    });
    const challenge = await this.challenges.issue(
      auth.project.id,
      'passkey-register',
      PASSKEY_CHALLENGE_TTL,
      {
        userId: auth.user.id,
        challenge: options.challenge,
      },
    );
    return { challenge_id: challenge.id, options };
  }

  async register(
    auth: Authenticated,
    input: { challenge_id: string; credential: unknown; name?: string },
  ): Promise<PasskeyView> {
    const challenge = await this.challenges.consume(auth.project.id, input.challenge_id, 'passkey-register');
    if (challenge.user_id !== auth.user.id)
      throw badRequest('no such challenge for this user', ErrorCodes.challengeNotFound);
    const { rpID, origins } = relyingParty(auth.project);
    let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
    try {
      verification = await verifyRegistrationResponse({
        response: input.credential as RegistrationResponseJSON,
        expectedChallenge: challenge.challenge,
        expectedOrigin: origins,
        expectedRPID: rpID,
        requireUserVerification: true,
      });
    } catch (error) {
      throw failed(`the passkey registration could not be verified: ${safeReason(error)}`);
    }
    if (!verification.verified) throw failed('the passkey registration could not be verified');
    const info = verification.registrationInfo;
    if (!info.userVerified)
      throw failed('the authenticator did not verify the user', ErrorCodes.userVerificationRequired);
    const passkey: Passkey = {
      id: info.credential.id,
      project_id: auth.project.id,
      user_id: auth.user.id,
      public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: JSON.stringify(info.credential.transports ?? []),
      device_type: info.credentialDeviceType,
      backed_up: info.credentialBackedUp ? 1 : 0,
      aaguid: info.aaguid,
      name: input.name?.trim() || 'Passkey',
      created_at: this.now(),
      last_used_at: null,
    };
    if (!(await this.passkeys.insert(passkey)))
      throw new TesseraError(409, ErrorCodes.conflict, 'this passkey is already registered');
    await this.audit.record({
      projectId: auth.project.id,
      userId: auth.user.id,
      type: 'passkey.added',
      data: { passkey_id: passkey.id },
    });
    return passkeyView(passkey);
  }

  async list(userId: string): Promise<PasskeyView[]> {
    return (await this.passkeys.listByUser(userId)).map(passkeyView);
  }

  async remove(projectId: string, userId: string, passkeyId: string): Promise<void> {
    if (!(await this.passkeys.remove(userId, passkeyId)))
      throw notFound('no such passkey', ErrorCodes.passkeyNotFound);
    await this.audit.record({ projectId, userId, type: 'passkey.removed', data: { passkey_id: passkeyId } });
  }

  /**
   * Starts a passkey sign-in. Without an identifier the browser offers discoverable passkeys;
   * with one, the user's passkeys are listed (an unknown identifier gets the same kind of
   * answer with none, so the answer does not reveal whether the user exists). Identifier-first
   * starts are limited per identifier, known or not, so the limit reveals nothing either.
   */
  async authenticationOptions(project: Project, identifier: string | undefined) {
    const { rpID } = relyingParty(project);
    let userId: string | null = null;
    let allowCredentials: Array<{ id: string; transports: AuthenticatorTransportFuture[] }> = [];
    if (identifier !== undefined) {
      const normalised = normaliseIdentifier(identifier).value;
      const limit = await this.limits.limiter.hit(
        'passkey-signin-start',
        `${project.id}\0${normalised}`,
        this.limits.starts,
      );
      const user = await this.users.findByIdentifier(project.id, normalised);
      if (!limit.allowed) {
        if (user) await this.#failed(project, user.id, ErrorCodes.rateLimited);
        throw tooManyRequests('too many sign-in attempts for this user; try again later', limit.retryAfter);
      }
      if (user) {
        userId = user.id;
        allowCredentials = (await this.passkeys.listByUser(user.id)).map((p) => ({
          id: p.id,
          transports: JSON.parse(p.transports) as AuthenticatorTransportFuture[],
        }));
      }
    }
    const options = await generateAuthenticationOptions({
      rpID,
      allowCredentials,
      userVerification: 'required',
      timeout: PASSKEY_CHALLENGE_TTL * 1000,
    });
    const challenge = await this.challenges.issue(project.id, 'passkey-signin', PASSKEY_CHALLENGE_TTL, {
      userId,
      challenge: options.challenge,
    });
    return { challenge_id: challenge.id, options };
  }

  /** A `signin.failed` event of a passkey sign-in (no credential id, no identifier). */
  #failed(project: Project, userId: string | null, reason: string): Promise<void> {
    return this.audit.record({
      projectId: project.id,
      userId,
      type: 'signin.failed',
      data: { method: 'BIOMETRIC', reason },
    });
  }

  async signIn(
    project: Project,
    input: { challenge_id: string; credential: unknown; getOAuthToken?: boolean },
  ): Promise<SignInResult> {
    const credential = input.credential as AuthenticationResponseJSON;
    const credentialId = typeof credential?.id === 'string' ? credential.id : '';
    let challenge: Challenge;
    try {
      challenge = await this.challenges.consume(project.id, input.challenge_id, 'passkey-signin');
    } catch (error) {
      if (error instanceof ChallengeRefused) {
        // The challenge's user (identifier-first), else the owner of the passkey presented.
        const owner =
          error.userId ??
          (credentialId ? (await this.passkeys.find(project.id, credentialId))?.user_id : undefined) ??
          null;
        await this.#failed(project, owner, error.reason);
      }
      throw error;
    }
    const passkey = credentialId ? await this.passkeys.find(project.id, credentialId) : undefined;
    // A failure is the passkey owner's event when the passkey is known: in a discoverable
    // sign-in the challenge names no user, yet the integrator must see failures per user.
    const userId = challenge.user_id ?? passkey?.user_id ?? null;
    const fail = async (reason: string, error: TesseraError) => {
      await this.#failed(project, userId, reason);
      return error;
    };
    // Failed completes are counted per user once the user is known: every attempt takes a
    // unit and a success gives it back, so parallel attempts cannot slip past the limit.
    const failures = userId ? `${project.id}\0${userId}` : undefined;
    if (failures) {
      const budget = await this.limits.limiter.hit('passkey-signin-failure', failures, this.limits.failures);
      if (!budget.allowed) {
        throw await fail(
          ErrorCodes.tooManyAttempts,
          tooManyRequests(
            'too many failed passkey sign-ins for this user; try again later',
            budget.retryAfter,
            ErrorCodes.tooManyAttempts,
          ),
        );
      }
    }
    if (!passkey)
      throw await fail(
        'unknown_passkey',
        failed('this passkey is not registered here', ErrorCodes.passkeyNotFound),
      );
    if (challenge.user_id !== null && challenge.user_id !== passkey.user_id) {
      throw await fail('wrong_user', failed('this passkey belongs to another account'));
    }
    const { rpID, origins } = relyingParty(project);
    let verification: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
    try {
      verification = await verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: challenge.challenge,
        expectedOrigin: origins,
        expectedRPID: rpID,
        credential: {
          id: passkey.id,
          publicKey: Buffer.from(passkey.public_key, 'base64url'),
          counter: passkey.counter,
          transports: JSON.parse(passkey.transports) as AuthenticatorTransportFuture[],
        },
        requireUserVerification: true,
      });
    } catch (error) {
      const reason = safeReason(error);
      const uv = /user verification/i.test(reason);
      throw await fail(
        uv ? 'user_not_verified' : 'verification_failed',
        failed(
          uv
            ? 'the authenticator did not verify the user'
            : `the passkey assertion could not be verified: ${reason}`,
          uv ? ErrorCodes.userVerificationRequired : ErrorCodes.passkeyVerificationFailed,
        ),
      );
    }
    if (!verification.verified || !verification.authenticationInfo.userVerified) {
      throw await fail(
        'user_not_verified',
        failed('the authenticator did not verify the user', ErrorCodes.userVerificationRequired),
      );
    }
    const { newCounter } = verification.authenticationInfo;
    if (!(await this.passkeys.advanceCounter(passkey.id, passkey.counter, newCounter, this.now()))) {
      throw await fail('counter', failed('the passkey was used concurrently; try again'));
    }
    const user = await this.users.findById(passkey.user_id);
    if (!user)
      throw await fail(
        'unknown_user',
        failed('this passkey is not registered here', ErrorCodes.passkeyNotFound),
      );
    if (failures) await this.limits.limiter.refund('passkey-signin-failure', failures);
    await this.users.touchSignIn(user.id, this.now());
    await this.audit.record({
      projectId: project.id,
      userId: user.id,
      type: 'signin.succeeded',
      data: { method: 'BIOMETRIC', passkey_id: passkey.id },
    });
    if (input.getOAuthToken !== true) return { user_id: user.id, auth_method: 'BIOMETRIC' };
    return { oauth_token: await this.tokens.startSession(project, user, 'BIOMETRIC') };
  }
}

/** SimpleWebAuthn's messages name what failed (origin, challenge, counter…), never a secret. */
function safeReason(error: unknown): string {
  const message = error instanceof Error ? error.message : 'invalid response';
  return message.replace(/"[^"]{20,}"/g, '"…"').slice(0, 200);
}
