import type { DeviceView } from '@tessera/core';
import { type AuthMethod, type DeviceChallenge, ErrorCodes, type SignInResult } from '@tessera/core';
import type { RateLimit } from '../../config/index.js';
import { randomId } from '../../crypto/random.js';
import type { Challenge, Device, User } from '../../db/schema.js';
import { badRequest, notFound, TesseraError, tooManyRequests } from '../../errors.js';
import type { ClientNetwork } from '../../net/client-network.js';
import type { Authenticated } from '../../plugins/bearer.js';
import type { RateLimiter } from '../../plugins/rate-limiter.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { ChallengeKind } from '../challenges/challenges.repository.js';
import { ChallengeRefused, type ChallengesService } from '../challenges/challenges.service.js';
import type { Project } from '../projects/project.js';
import type { SessionService } from '../session/session.service.js';
import type { SecurityNotices } from '../sign-in/security-notices.js';
import type { SignInService } from '../sign-in/sign-in.service.js';
import type { StepUp } from '../sign-in/step-up.js';
import type { UsersRepository } from '../users/users.repository.js';
import type { DeviceRepository } from './device.repository.js';
import {
  importDeviceKey,
  type SignaturePurpose,
  signedMessage,
  verifyDeviceSignature,
} from './device-key.js';

/** Device challenges live two minutes. */
export const DEVICE_CHALLENGE_TTL = 120;

export type { DeviceView };

export function deviceView(device: Device): DeviceView {
  return {
    device_id: device.id,
    name: device.name,
    created_at: new Date(device.created_at).toISOString(),
    last_used_at: device.last_used_at === null ? null : new Date(device.last_used_at).toISOString(),
  };
}

export type { DeviceChallenge };

const KIND_PURPOSE: Record<'device-signin' | 'pin-signin', SignaturePurpose> = {
  'device-signin': 'device-signin',
  'pin-signin': 'pin-signin',
};

const KIND_METHOD: Record<'device-signin' | 'pin-signin', AuthMethod> = {
  'device-signin': 'TRUSTED DEVICE',
  'pin-signin': 'PIN',
};

/** Trusted devices: registration with proof of possession, challenge–response sign-in. */
export class DeviceService {
  constructor(
    private readonly repository: DeviceRepository,
    private readonly users: UsersRepository,
    private readonly challenges: ChallengesService,
    private readonly signInService: SignInService,
    private readonly sessions: SessionService,
    private readonly limiter: RateLimiter,
    private readonly perSubject: RateLimit,
    private readonly audit: AuditLog,
    private readonly stepUp: StepUp,
    private readonly notices: SecurityNotices,
    private readonly now: () => number = Date.now,
  ) {}

  async registrationChallenge(auth: Authenticated): Promise<DeviceChallenge> {
    await this.stepUp.requireRecentStrongSignIn(auth, 'trust a new device');
    const challenge = await this.challenges.issue(auth.project.id, 'device-register', DEVICE_CHALLENGE_TTL, {
      userId: auth.user.id,
    });
    return { challenge_id: challenge.id, nonce: challenge.challenge, expires_in: DEVICE_CHALLENGE_TTL };
  }

  async register(
    auth: Authenticated,
    input: { challenge_id: string; public_key: unknown; signature: string; name?: string },
  ) {
    const key = importDeviceKey(input.public_key);
    await this.stepUp.requireRecentStrongSignIn(auth, 'trust a new device');
    const challenge = await this.challenges.consume(auth.project.id, input.challenge_id, 'device-register');
    if (challenge.user_id !== auth.user.id)
      throw badRequest('no such challenge for this user', ErrorCodes.challengeNotFound);
    const message = signedMessage(
      'device-register',
      auth.project.api_key_id,
      challenge.id,
      challenge.challenge,
    );
    if (!verifyDeviceSignature(key.key, message, input.signature)) {
      throw new TesseraError(
        401,
        ErrorCodes.invalidSignature,
        'the signature does not prove possession of this key',
      );
    }
    const device: Device = {
      id: randomId('dev'),
      project_id: auth.project.id,
      user_id: auth.user.id,
      public_jwk: key.jwk,
      thumbprint: key.thumbprint,
      name: input.name?.trim() || 'Trusted device',
      created_at: this.now(),
      last_used_at: null,
    };
    if (!(await this.repository.insert(device))) {
      throw new TesseraError(
        409,
        ErrorCodes.deviceAlreadyRegistered,
        'this public key is already registered',
      );
    }
    await this.audit.record({
      projectId: auth.project.id,
      userId: auth.user.id,
      type: 'device.added',
      data: { device_id: device.id },
    });
    await this.notices.enrolled(auth.project, auth.user, 'device.added');
    return deviceView(device);
  }

  async list(userId: string): Promise<DeviceView[]> {
    return (await this.repository.listByUser(userId)).map(deviceView);
  }

  async rename(userId: string, deviceId: string, name: string): Promise<DeviceView> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 100) throw badRequest('name must be 1 to 100 characters');
    if (!(await this.repository.rename(userId, deviceId, trimmed)))
      throw notFound('no such device', ErrorCodes.deviceNotFound);
    const devices = await this.repository.listByUser(userId);
    return deviceView(devices.find((d) => d.id === deviceId)!);
  }

  /** Removes a device and ends the sessions it started. */
  async remove(projectId: string, userId: string, deviceId: string): Promise<void> {
    const revoked = await this.repository.remove(userId, deviceId, this.now());
    if (!revoked) throw notFound('no such device', ErrorCodes.deviceNotFound);
    this.sessions.ended(revoked);
    await this.audit.record({
      projectId,
      userId,
      type: 'device.removed',
      data: { device_id: deviceId, sessions_revoked: revoked.length },
    });
  }

  /** A `signin.failed` event of a device or PIN sign-in: method, reason, the device where known. */
  #failed(
    project: Project,
    kind: 'device-signin' | 'pin-signin',
    reason: string,
    userId: string | null,
    deviceId: string | null,
  ): Promise<void> {
    return this.signInService.recordFailure(project, { method: KIND_METHOD[kind], reason, userId, deviceId });
  }

  /**
   * Starts a device (or PIN) sign-in: a nonce bound to the project and the device. Starts are
   * limited per user (the OTP start rule), whichever of the user's devices asks, and per IP (route).
   */
  async signInChallenge(
    project: Project,
    deviceId: string,
    kind: 'device-signin' | 'pin-signin',
  ): Promise<DeviceChallenge> {
    const device = await this.repository.find(project.id, deviceId);
    if (!device) {
      // The id was sent by the caller and names nothing here: it is not recorded.
      await this.#failed(project, kind, ErrorCodes.deviceNotFound, null, null);
      throw badRequest('no such device in this project', ErrorCodes.deviceNotFound);
    }
    const limit = await this.limiter.hit(
      `${kind}-start`,
      `${project.id}\0${device.user_id}`,
      this.perSubject,
    );
    if (!limit.allowed) {
      await this.#failed(project, kind, ErrorCodes.rateLimited, device.user_id, device.id);
      throw tooManyRequests('too many sign-in attempts for this user; try again later', limit.retryAfter);
    }
    const challenge = await this.challenges.issue(project.id, kind, DEVICE_CHALLENGE_TTL, {
      userId: device.user_id,
      deviceId: device.id,
    });
    return { challenge_id: challenge.id, nonce: challenge.challenge, expires_in: DEVICE_CHALLENGE_TTL };
  }

  /**
   * Consumes a sign-in challenge and checks the device's signature over it. The challenge is
   * spent whatever the outcome: one signature check per nonce. Every refusal is audited.
   */
  async checkSignature(
    project: Project,
    challengeId: string,
    kind: ChallengeKind & keyof typeof KIND_PURPOSE,
    signature: string,
  ) {
    let challenge: Challenge;
    try {
      challenge = await this.challenges.consume(project.id, challengeId, kind);
    } catch (error) {
      if (error instanceof ChallengeRefused)
        await this.#failed(project, kind, error.reason, error.userId, error.deviceId);
      throw error;
    }
    const device = challenge.device_id
      ? await this.repository.find(project.id, challenge.device_id)
      : undefined;
    if (!device) {
      await this.#failed(project, kind, ErrorCodes.deviceNotFound, challenge.user_id, challenge.device_id);
      throw badRequest('this device has been removed', ErrorCodes.deviceNotFound);
    }
    const key = importDeviceKey(device.public_jwk);
    const message = signedMessage(KIND_PURPOSE[kind], project.api_key_id, challenge.id, challenge.challenge);
    if (!verifyDeviceSignature(key.key, message, signature)) {
      await this.#failed(project, kind, ErrorCodes.invalidSignature, device.user_id, device.id);
      throw new TesseraError(
        401,
        ErrorCodes.invalidSignature,
        'the device signature is not valid for this challenge',
      );
    }
    const user = await this.users.findById(device.user_id);
    if (!user) {
      await this.#failed(project, kind, ErrorCodes.deviceNotFound, null, device.id);
      throw badRequest('this device has been removed', ErrorCodes.deviceNotFound);
    }
    return { device, user };
  }

  /** Ends a device-backed sign-in: session bound to the device, bundle or ids. */
  async finish(
    project: Project,
    user: User,
    device: Device,
    method: AuthMethod,
    getOAuthToken: boolean,
    network: ClientNetwork,
  ): Promise<SignInResult> {
    await this.repository.touch(device.id, this.now());
    return this.signInService.complete(
      project,
      user,
      { method, deviceId: device.id },
      { getOAuthToken, extras: { network } },
    );
  }

  async signIn(
    project: Project,
    challengeId: string,
    signature: string,
    getOAuthToken: boolean,
    network: ClientNetwork,
  ): Promise<SignInResult> {
    const { device, user } = await this.checkSignature(project, challengeId, 'device-signin', signature);
    return this.finish(project, user, device, 'TRUSTED DEVICE', getOAuthToken, network);
  }
}
