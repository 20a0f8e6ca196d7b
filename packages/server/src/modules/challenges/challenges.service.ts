import { ErrorCodes } from '@tessera/core';
import { randomId, randomToken } from '../../crypto/random.js';
import type { Challenge } from '../../db/schema.js';
import { TesseraError } from '../../errors.js';
import type { ChallengeKind, ChallengesRepository } from './challenges.repository.js';

/** Why a challenge was refused: its problem code, also the `reason` of a `signin.failed` event. */
export type ChallengeRefusal =
  | typeof ErrorCodes.challengeNotFound
  | typeof ErrorCodes.challengeUsed
  | typeof ErrorCodes.challengeExpired;

/**
 * A challenge that is unknown (or of another project or kind), already used, or expired: a 400
 * problem document. It also says whose challenge it was (used or expired ones of this project),
 * so a sign-in can record the failure against the user without a further query.
 */
export class ChallengeRefused extends TesseraError {
  constructor(
    readonly reason: ChallengeRefusal,
    detail: string,
    readonly userId: string | null = null,
    readonly deviceId: string | null = null,
  ) {
    super(400, reason, detail);
  }
}

export class ChallengesService {
  constructor(
    private readonly repository: ChallengesRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** Issues a challenge with a fresh 256-bit nonce (or the given WebAuthn challenge). */
  async issue(
    projectId: string,
    kind: ChallengeKind,
    ttlSeconds: number,
    fields: { userId?: string | null; deviceId?: string | null; challenge?: string } = {},
  ): Promise<Challenge> {
    const now = this.now();
    const challenge: Challenge = {
      id: randomId('ch'),
      project_id: projectId,
      kind,
      user_id: fields.userId ?? null,
      device_id: fields.deviceId ?? null,
      challenge: fields.challenge ?? randomToken(32),
      created_at: now,
      expires_at: now + ttlSeconds * 1000,
      consumed_at: null,
    };
    await this.repository.insert(challenge);
    return challenge;
  }

  /**
   * Consumes the challenge, of this kind or one of these, or throws a ChallengeRefused saying
   * whether it is unknown, used or expired.
   */
  async consume(
    projectId: string,
    id: string,
    kind: ChallengeKind | readonly ChallengeKind[],
  ): Promise<Challenge> {
    const kinds = typeof kind === 'string' ? [kind] : kind;
    const row = await this.repository.consume(projectId, id, kinds, this.now());
    if (row) return row;
    const { reason, userId, deviceId } = await this.repository.why(projectId, id, kinds);
    if (reason === 'used')
      throw new ChallengeRefused(
        ErrorCodes.challengeUsed,
        'this challenge has already been used',
        userId,
        deviceId,
      );
    if (reason === 'expired')
      throw new ChallengeRefused(
        ErrorCodes.challengeExpired,
        'this challenge has expired; start again',
        userId,
        deviceId,
      );
    throw new ChallengeRefused(ErrorCodes.challengeNotFound, 'no such challenge for this project');
  }
}
