import { sql } from 'kysely';
import type { Db } from '../../db/connect.js';

export const MAX_PIN_ATTEMPTS = 5;

export class PinRepository {
  constructor(private readonly db: Db) {}

  find(userId: string) {
    return this.db.kysely.selectFrom('pins').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }

  async upsert(userId: string, hash: string, at: number): Promise<void> {
    await this.db.kysely
      .insertInto('pins')
      .values({ user_id: userId, hash, failed_attempts: 0, locked_at: null, updated_at: at })
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet({ hash, failed_attempts: 0, locked_at: null, updated_at: at }),
      )
      .execute();
  }

  async remove(userId: string): Promise<boolean> {
    const result = await this.db.kysely.deleteFrom('pins').where('user_id', '=', userId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Takes one PIN attempt in a single statement (so parallel guesses can never exceed the
   * limit, in any number of processes). Undefined when locked or no PIN is set.
   */
  reserveAttempt(userId: string) {
    return this.db.kysely
      .updateTable('pins')
      .set({ failed_attempts: sql<number>`failed_attempts + 1` })
      .where('user_id', '=', userId)
      .where('failed_attempts', '<', MAX_PIN_ATTEMPTS)
      .returning(['hash', 'failed_attempts'])
      .executeTakeFirst();
  }

  /** Marks the PIN locked once its attempts are used up; true the first time. */
  async lock(userId: string, at: number): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('pins')
      .set({ locked_at: at })
      .where('user_id', '=', userId)
      .where('failed_attempts', '>=', MAX_PIN_ATTEMPTS)
      .where('locked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** A right PIN, or a sign-in by OTP: the count starts again and any lock is lifted. */
  async reset(userId: string): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('pins')
      .set({ failed_attempts: 0, locked_at: null })
      .where('user_id', '=', userId)
      .where('failed_attempts', '>', 0)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
