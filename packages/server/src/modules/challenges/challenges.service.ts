import { ErrorCodes } from '@tessera/core';
import { randomId, randomToken } from '../../crypto/random.js';
import type { Challenge } from '../../db/schema.js';
import { badRequest } from '../../errors.js';
import type { ChallengeKind, ChallengesRepository } from './challenges.repository.js';

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

  /** Consumes the challenge or throws a 400 saying whether it is unknown, used or expired. */
  async consume(projectId: string, id: string, kind: ChallengeKind): Promise<Challenge> {
    const row = await this.repository.consume(projectId, id, kind, this.now());
    if (row) return row;
    const why = await this.repository.why(projectId, id, kind);
    if (why === 'used') throw badRequest('this challenge has already been used', ErrorCodes.challengeUsed);
    if (why === 'expired')
      throw badRequest('this challenge has expired; start again', ErrorCodes.challengeExpired);
    throw badRequest('no such challenge for this project', ErrorCodes.challengeNotFound);
  }
}
