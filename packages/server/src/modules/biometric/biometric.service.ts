import { createHmac, generateKeyPairSync } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransportFuture,
  RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { PasskeyView } from '@tessera/core';
import { type ErrorCode, ErrorCodes, type SignInResult } from '@tessera/core';
import type { RateLimit } from '../../config/index.js';
import type { Challenge, Passkey } from '../../db/schema.js';
import { badRequest, notFound, TesseraError, tooManyRequests } from '../../errors.js';
import { lazyImport } from '../../lazy.js';
import type { ClientNetwork } from '../../net/client-network.js';
import type { Authenticated } from '../../plugins/bearer.js';
import type { RateLimiter } from '../../plugins/rate-limiter.js';
import type { AuditLog } from '../audit/audit.service.js';
import { ChallengeRefused, type ChallengesService } from '../challenges/challenges.service.js';
import { normaliseIdentifier } from '../otp/identifier.js';
import type { Project } from '../projects/project.js';
import type { SessionService } from '../session/session.service.js';
import type { SecurityNotices } from '../sign-in/security-notices.js';
import type { SignInService } from '../sign-in/sign-in.service.js';
import type { StepUp } from '../sign-in/step-up.js';
import type { UsersRepository } from '../users/users.repository.js';
import type { PasskeyRepository } from './passkey.repository.js';

/**
 * SimpleWebAuthn and the ASN.1/X.509 libraries under it (about 1 MB of source) are loaded on the
 * first passkey request: most processes never serve one.
 */
const webauthn = lazyImport(() => import('@simplewebauthn/server'));

/**
 * Lengths of platform authenticators' credential ids (16 bytes: Android and Chrome; 20: iCloud
 * Keychain; 32: Windows Hello and others): a decoy takes one of them, chosen by its own HMAC, so
 * decoys of different identifiers are as mixed as real passkeys.
 */
const DECOY_ID_BYTES = [16, 20, 32] as const;
/** In the order browsers report them (`getTransports()` sorts): a decoy lists what a real platform passkey does. */
const DECOY_TRANSPORTS: AuthenticatorTransportFuture[] = ['hybrid', 'internal'];

/**
 * The one refusal of a sign-in started with an identifier, whatever went wrong before the
 * signature held (an unknown or decoy credential, another account's passkey, an assertion that
 * does not verify): any difference would tell a stranger who has an account, or who has a passkey.
 */
const IDENTIFIED_REFUSAL = 'the passkey could not be verified';

/**
 * A COSE P-256 public key no one holds the private key of (RFC 9053 §7.1.1: kty EC2, alg ES256,
 * crv P-256, x, y), made once per process with SimpleWebAuthn's CBOR encoder: what an unknown
 * credential's assertion is checked against in an identifier-first sign-in, so its refusal costs
 * what another one does.
 */
export const standInKey = lazyImport(async () => {
  const { isoCBOR } = await import('@simplewebauthn/server/helpers');
  const { x, y } = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const coordinate = (value: string | undefined) => Buffer.from(value ?? '', 'base64url');
  const cose = new Map<number, number | Uint8Array>([
    [1, 2],
    [3, -7],
    [-1, 1],
    [-2, coordinate(x)],
    [-3, coordinate(y)],
  ]);
  return Buffer.from(isoCBOR.encode(cose));
});

/** WebAuthn ceremonies get five minutes. */
export const PASSKEY_CHALLENGE_TTL = 300;

export type { PasskeyView };

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
  const origins = [...project.origins];
  const rpID = project.rp_id ?? (origins[0] ? new URL(origins[0]).hostname : undefined);
  if (!rpID || origins.length === 0) {
    throw badRequest('this project has no relying-party id or origins for passkeys; configure them first');
  }
  return { rpID, origins };
}

/**
 * The per-user limits of passkey sign-in, the same rules as OTP: starts per identifier and client
 * network (`TESSERA_RATE_LIMIT_OTP_START`) under an identifier-wide ceiling
 * (`TESSERA_RATE_LIMIT_OTP_START_CEILING`), and failed completes per user
 * (`TESSERA_RATE_LIMIT_OTP_GUESSES`). The per-IP limit is the route's.
 */
export interface PasskeySignInLimits {
  limiter: RateLimiter;
  /**
   * Identifier-first starts per identifier, project and client network, whether or not the user
   * exists: a stranger spends only their own network's, not the real user's.
   */
  starts: RateLimit;
  /** Identifier-first starts per identifier and project from all networks together. */
  startCeiling: RateLimit;
  /** Failed completes per user (a success gives its unit back), discoverable or not. */
  failures: RateLimit;
}

/** BIOMETRIC: WebAuthn passkeys with user verification required. */
export class BiometricService {
  constructor(
    private readonly passkeys: PasskeyRepository,
    private readonly users: UsersRepository,
    private readonly challenges: ChallengesService,
    private readonly signInService: SignInService,
    private readonly sessions: SessionService,
    private readonly audit: AuditLog,
    private readonly limits: PasskeySignInLimits,
    /** Keys the decoy credential ids of identifiers without passkeys. */
    private readonly decoyKey: Buffer,
    private readonly stepUp: StepUp,
    private readonly notices: SecurityNotices,
    private readonly now: () => number = Date.now,
  ) {}

  async registrationOptions(auth: Authenticated) {
    await this.stepUp.requireRecentStrongSignIn(auth, 'add a passkey');
    const { rpID } = relyingParty(auth.project);
    const existing = await this.passkeys.listByUser(auth.user.id);
    const options = await (await webauthn()).generateRegistrationOptions({
      rpName: auth.project.name,
      rpID,
      userName: auth.user.identifier,
      userID: new TextEncoder().encode(auth.user.id),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({
        id: p.id,
        transports: p.transports as AuthenticatorTransportFuture[],
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
    await this.stepUp.requireRecentStrongSignIn(auth, 'add a passkey');
    // Loaded before the challenge is spent, and outside the try below: a failed import is ours.
    const lib = await webauthn();
    const challenge = await this.challenges.consume(auth.project.id, input.challenge_id, 'passkey-register');
    if (challenge.user_id !== auth.user.id)
      throw badRequest('no such challenge for this user', ErrorCodes.challengeNotFound);
    const { rpID, origins } = relyingParty(auth.project);
    let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
    try {
      verification = await lib.verifyRegistrationResponse({
        response: input.credential as RegistrationResponseJSON,
        expectedChallenge: challenge.challenge,
        expectedOrigin: origins,
        expectedRPID: rpID,
        requireUserVerification: true,
      });
    } catch (error) {
      throw failed(`the passkey registration could not be verified: ${failureReason(error)}`);
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
      transports: info.credential.transports ?? [],
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
    await this.notices.enrolled(auth.project, auth.user, 'passkey.added');
    return passkeyView(passkey);
  }

  async list(userId: string): Promise<PasskeyView[]> {
    return (await this.passkeys.listByUser(userId)).map(passkeyView);
  }

  /** Removes a passkey and ends the sessions it started. */
  async remove(projectId: string, userId: string, passkeyId: string): Promise<void> {
    const revoked = await this.passkeys.remove(userId, passkeyId, this.now());
    if (!revoked) throw notFound('no such passkey', ErrorCodes.passkeyNotFound);
    this.sessions.ended(revoked);
    await this.audit.record({
      projectId,
      userId,
      type: 'passkey.removed',
      data: { passkey_id: passkeyId, sessions_revoked: revoked.length },
    });
  }

  /**
   * Starts a passkey sign-in. Without an identifier the browser offers discoverable passkeys;
   * with one, the user's passkeys are listed. An identifier with no passkey here (no such user,
   * or a user without passkeys) gets a decoy credential id, stable for that identifier and shaped
   * like a platform authenticator's, so the answer does not tell who has an account. Starts are
   * limited per identifier, known or not, so the limit reveals nothing either.
   */
  async authenticationOptions(project: Project, identifier: string | undefined, client: ClientNetwork) {
    const { rpID } = relyingParty(project);
    let userId: string | null = null;
    let allowCredentials: Array<{ id: string; transports: AuthenticatorTransportFuture[] }> = [];
    if (identifier !== undefined) {
      const normalised = normaliseIdentifier(identifier).value;
      const everywhere = `${project.id}\0${normalised}`;
      // The caller's own window first: a refused stranger never touches the shared ceiling.
      const { results } = await this.limits.limiter.hitSteps([
        [{ scope: 'passkey-signin-start', subject: `${everywhere}\0${client}`, rule: this.limits.starts }],
        [{ scope: 'passkey-signin-start-all', subject: everywhere, rule: this.limits.startCeiling }],
      ]);
      const limit = results.find((r) => !r.allowed);
      const user = await this.users.findByIdentifier(project.id, normalised);
      if (limit) {
        if (user) this.#failed(project, user.id, ErrorCodes.rateLimited);
        throw tooManyRequests('too many sign-in attempts for this user; try again later', limit.retryAfter);
      }
      if (user) {
        userId = user.id;
        allowCredentials = (await this.passkeys.listByUser(user.id)).map((p) => ({
          id: p.id,
          transports: p.transports as AuthenticatorTransportFuture[],
        }));
      }
      if (allowCredentials.length === 0) allowCredentials = [this.#decoy(project, normalised)];
    }
    const options = await (await webauthn()).generateAuthenticationOptions({
      rpID,
      allowCredentials,
      userVerification: 'required',
      timeout: PASSKEY_CHALLENGE_TTL * 1000,
    });
    const kind = identifier === undefined ? 'passkey-signin' : 'passkey-signin-identified';
    const challenge = await this.challenges.issue(project.id, kind, PASSKEY_CHALLENGE_TTL, {
      userId,
      challenge: options.challenge,
    });
    return { challenge_id: challenge.id, options };
  }

  /** The decoy credential of an identifier with no passkey: an HMAC, so the same on every start. */
  #decoy(project: Project, identifier: string) {
    const digest = createHmac('sha512', this.decoyKey).update(`${project.id}\0${identifier}`).digest();
    const length = DECOY_ID_BYTES[digest[63]! % DECOY_ID_BYTES.length]!;
    return { id: digest.subarray(0, length).toString('base64url'), transports: DECOY_TRANSPORTS };
  }

  /**
   * A `signin.failed` event of a passkey sign-in (no credential id, no identifier), recorded
   * without waiting: a refusal takes as long whether the event names a user (stored) or no one (at
   * times only counted), so its timing does not tell who has an account. The audit log logs what
   * fails and waits for what is in flight at shutdown.
   */
  #failed(project: Project, userId: string | null, reason: string): void {
    void this.signInService.recordFailure(project, { method: 'BIOMETRIC', reason, userId });
  }

  async signIn(
    project: Project,
    input: { challenge_id: string; credential: unknown; getOAuthToken?: boolean },
    network: ClientNetwork,
  ): Promise<SignInResult> {
    // Loaded before the challenge is spent, and outside the try below: a failed import is ours.
    const lib = await webauthn();
    const credential = input.credential as AuthenticationResponseJSON;
    const credentialId = typeof credential?.id === 'string' ? credential.id : '';
    let challenge: Challenge;
    try {
      challenge = await this.challenges.consume(project.id, input.challenge_id, [
        'passkey-signin',
        'passkey-signin-identified',
      ]);
    } catch (error) {
      if (error instanceof ChallengeRefused) {
        // The challenge's user (identifier-first), else the owner of the passkey presented.
        const owner =
          error.userId ??
          (credentialId ? (await this.passkeys.find(project.id, credentialId))?.user_id : undefined) ??
          null;
        this.#failed(project, owner, error.reason);
      }
      throw error;
    }
    const passkey = credentialId ? await this.passkeys.find(project.id, credentialId) : undefined;
    // A failure is the passkey owner's event when the passkey is known: in a discoverable
    // sign-in the challenge names no user, yet the integrator must see failures per user.
    const userId = challenge.user_id ?? passkey?.user_id ?? null;
    const fail = (reason: string, error: TesseraError) => {
      this.#failed(project, userId, reason);
      return error;
    };
    // Started with an identifier: only the credentials it offered, the user's own, may finish it
    // (none, for an identifier with no passkey), and every refusal reads the same.
    const identified = challenge.kind === 'passkey-signin-identified';
    const refusal = (detail: string, code?: ErrorCode) =>
      identified ? failed(IDENTIFIED_REFUSAL) : failed(detail, code);
    if (!passkey && !identified)
      throw fail(
        'unknown_passkey',
        failed('this passkey is not registered here', ErrorCodes.passkeyNotFound),
      );
    // A challenge of the kind before identified sign-ins had their own, naming its user (issued
    // before an upgrade, or by an older instance during a rolling one): refused as it was then.
    if (passkey && !identified && challenge.user_id !== null && challenge.user_id !== passkey.user_id) {
      throw fail('wrong_user', failed('this passkey belongs to another account'));
    }
    // The signature is checked before the owner's failure budget is touched: an assertion nobody
    // but the authenticator could have made is the only thing that may spend it, so a stranger
    // naming someone's credential id cannot lock the real passkey out. The signature counter too
    // is compared only once the signature holds (the library compares it first): otherwise
    // anyone who knows a credential id could learn its counter, how often it signed in, from
    // which forged counters were refused as too low.
    const { rpID, origins } = relyingParty(project);
    let verification: Awaited<ReturnType<typeof verifyAuthenticationResponse>> | undefined;
    let unverifiable: unknown;
    try {
      verification = await lib.verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: challenge.challenge,
        expectedOrigin: origins,
        expectedRPID: rpID,
        credential: passkey
          ? {
              id: passkey.id,
              publicKey: Buffer.from(passkey.public_key, 'base64url'),
              counter: 0,
              transports: passkey.transports as AuthenticatorTransportFuture[],
            }
          : { id: credentialId, publicKey: await standInKey(), counter: 0 },
        requireUserVerification: false,
      });
    } catch (error) {
      unverifiable = error;
    }
    // Not this user's passkey in a sign-in started with an identifier: refused only now, after the
    // same signature check as the user's own (against a stand-in key for an unknown credential),
    // so that a refusal takes as long whoever the identifier is.
    if (!passkey || (identified && passkey.user_id !== challenge.user_id))
      throw fail(passkey ? 'wrong_user' : 'unknown_passkey', failed(IDENTIFIED_REFUSAL));
    if (!verification)
      throw fail(
        'verification_failed',
        refusal(`the passkey assertion could not be verified: ${failureReason(unverifiable)}`),
      );
    if (!verification.verified) {
      throw fail('verification_failed', refusal('the passkey signature is not valid'));
    }
    if (counterWentBack(verification.authenticationInfo.newCounter, passkey.counter)) {
      // A genuine signature with a counter not above the stored one: a cloned authenticator, or
      // an old assertion. Refused like a failed verification, without spending the budget.
      throw fail(
        'verification_failed',
        failed("the passkey's signature counter did not advance (a cloned authenticator?)"),
      );
    }
    // Failed completes of genuine assertions are counted per user: every attempt takes a unit and
    // a success gives it back, so parallel attempts cannot slip past the limit.
    const failures = `${project.id}\0${passkey.user_id}`;
    const budget = await this.limits.limiter.hit('passkey-signin-failure', failures, this.limits.failures);
    if (!budget.allowed) {
      throw fail(
        ErrorCodes.tooManyAttempts,
        tooManyRequests(
          'too many failed passkey sign-ins for this user; try again later',
          budget.retryAfter,
          ErrorCodes.tooManyAttempts,
        ),
      );
    }
    if (!verification.authenticationInfo.userVerified) {
      throw fail(
        'user_not_verified',
        failed('the authenticator did not verify the user', ErrorCodes.userVerificationRequired),
      );
    }
    const { newCounter } = verification.authenticationInfo;
    if (!(await this.passkeys.advanceCounter(passkey.id, passkey.counter, newCounter, this.now()))) {
      throw fail('counter', failed('the passkey was used concurrently; try again'));
    }
    const user = await this.users.findById(passkey.user_id);
    if (!user)
      throw fail('unknown_user', failed('this passkey is not registered here', ErrorCodes.passkeyNotFound));
    await this.limits.limiter.refund('passkey-signin-failure', failures);
    return this.signInService.complete(
      project,
      user,
      { method: 'BIOMETRIC', passkeyId: passkey.id },
      { getOAuthToken: input.getOAuthToken === true, extras: { network } },
    );
  }
}

/**
 * WebAuthn's counter rule (§6.1.1): a counter that is not zero on both sides must grow. The
 * library's own check runs before the signature's and is turned off (stored counter 0 given).
 */
export function counterWentBack(received: number, stored: number): boolean {
  return (received > 0 || stored > 0) && received <= stored;
}

const FAILURE_REASONS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^Unexpected \w+ response origin/, 'it comes from an origin the project does not allow'],
  [
    /^Unexpected \w+ response challenge|^Custom challenge verifier/,
    'it does not answer the challenge that was issued',
  ],
  [/^Unexpected RP ID hash/, "it was made for another relying party (the project's RP ID)"],
  [/^User verification (was )?required/, 'the authenticator did not verify the user'],
  [
    /^User not present|^User presence was required/,
    'the authenticator did not confirm that the user was present',
  ],
  [
    /attestation|certificate|AAGUID|public key/i,
    'its attestation or public key is not valid or not supported',
  ],
  [/signature/i, 'its signature is not valid'],
];

/**
 * What failed, in fixed words: SimpleWebAuthn's messages quote the response (its type, origin,
 * challenge), the project's allowed origins and the stored counter, and a malformed response can
 * fail inside the library with a JavaScript error about its own code. A detail never quotes the
 * request or stored state (docs/API.md, "Errors"), so only the kind of failure is told.
 */
export function failureReason(error: unknown): string {
  // The library's refusals are Errors; a TypeError or RangeError is a response it choked on.
  if (!(error instanceof Error) || error instanceof TypeError || error instanceof RangeError)
    return 'the response is malformed';
  const { message } = error;
  for (const [pattern, reason] of FAILURE_REASONS) if (pattern.test(message)) return reason;
  return 'the response is malformed';
}
