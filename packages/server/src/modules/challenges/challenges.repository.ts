import type { Db } from '../../db/connect.js';
import type { Challenge } from '../../db/schema.js';

export type ChallengeKind =
  | 'device-register'
  | 'device-signin'
  | 'pin-signin'
  | 'passkey-register'
  | 'passkey-signin'
  /** A passkey sign-in started with an identifier: only the credentials it offered may finish it. */
  | 'passkey-signin-identified';

/** Single-use, expiring challenges of the device, PIN and passkey ceremonies. */
export class ChallengesRepository {
  constructor(private readonly db: Db) {}

  async insert(challenge: Challenge): Promise<void> {
    await this.db.kysely.insertInto('challenges').values(challenge).execute();
  }

  /**
   * Consumes a challenge in one statement: exactly one caller gets the row, and only while it
   * is unexpired, unused, of one of these kinds and of this project.
   */
  consume(
    projectId: string,
    id: string,
    kinds: readonly ChallengeKind[],
    now: number,
  ): Promise<Challenge | undefined> {
    return this.db.kysely
      .updateTable('challenges')
      .set({ consumed_at: now })
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .where('kind', 'in', kinds)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * Why a challenge could not be consumed, for a precise error, and whose it was (for the audit
   * log; only a challenge of this project and kind names its user and device).
   */
  async why(
    projectId: string,
    id: string,
    kinds: readonly ChallengeKind[],
  ): Promise<{ reason: 'not_found' | 'used' | 'expired'; userId: string | null; deviceId: string | null }> {
    const row = await this.db.kysely
      .selectFrom('challenges')
      .select(['consumed_at', 'project_id', 'kind', 'user_id', 'device_id'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row || row.project_id !== projectId || !(kinds as readonly string[]).includes(row.kind))
      return { reason: 'not_found', userId: null, deviceId: null };
    return {
      reason: row.consumed_at !== null ? 'used' : 'expired',
      userId: row.user_id,
      deviceId: row.device_id,
    };
  }

  async prune(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('challenges').where('expires_at', '<', before).execute();
  }
}
