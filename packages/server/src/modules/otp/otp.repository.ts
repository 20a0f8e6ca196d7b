import type { Db } from '../../db/connect.js';
import { prepared } from '../../db/prepared.js';
import type { OtpChallengeTable } from '../../db/schema.js';

export interface ReservedAttempt {
  identifier: string;
  channel: 'email' | 'sms';
  code_hash: string;
  attempts: number;
  max_attempts: number;
}

const findChallenge = prepared((db, projectId: string, id: string) =>
  db.selectFrom('otp_challenges').selectAll().where('id', '=', id).where('project_id', '=', projectId),
);

const reserve = prepared((db, projectId: string, id: string, now: number) =>
  db
    .updateTable('otp_challenges')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .whereRef('attempts', '<', 'max_attempts')
    .returning(['identifier', 'channel', 'code_hash', 'attempts', 'max_attempts']),
);

const consumeChallenge = prepared((db, id: string, now: number) =>
  db
    .updateTable('otp_challenges')
    .set({ consumed_at: now })
    .where('id', '=', id)
    .where('consumed_at', 'is', null),
);

export class OtpRepository {
  constructor(private readonly db: Db) {}

  async insert(challenge: Omit<OtpChallengeTable, 'attempts'>): Promise<void> {
    await this.db.kysely.insertInto('otp_challenges').values(challenge).execute();
  }

  async find(projectId: string, id: string) {
    return (await findChallenge(this.db.kysely, projectId, id)).rows[0];
  }

  /**
   * Takes one guess from the challenge's budget in a single statement: of twenty parallel
   * guesses exactly `max_attempts` get a row back. Undefined when the challenge is unknown,
   * used up, expired or out of guesses.
   */
  async reserveAttempt(projectId: string, id: string, now: number): Promise<ReservedAttempt | undefined> {
    return (await reserve(this.db.kysely, projectId, id, now)).rows[0];
  }

  /** Marks the challenge used; true for exactly one caller. */
  async consume(id: string, now: number): Promise<boolean> {
    const result = await consumeChallenge(this.db.kysely, id, now);
    return (result.numAffectedRows ?? 0n) > 0n;
  }

  async prune(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('otp_challenges').where('expires_at', '<', before).execute();
  }
}
