import { sql } from 'kysely';
import type { Db } from '../../db/connect.js';

export const MAX_PIN_ATTEMPTS = 5;

export class PinRepository {
  constructor(private readonly db: Db) {}

  find(userId: string) {
    return this.db.kysely.selectFrom('pins').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }

  /**
   * Stores a PIN, new or in place of one, with a fresh count of attempts. A locked PIN is only
   * replaced when `clearLock` is true (the caller has checked a recent OTP sign-in); otherwise
   * the lock holds, even one taken by wrong PINs racing this request, and the answer is false.
   */
  async upsert(userId: string, hash: string, at: number, options: { clearLock: boolean }): Promise<boolean> {
    const row = await this.db.kysely
      .insertInto('pins')
      .values({ user_id: userId, hash, failed_attempts: 0, locked_at: null, updated_at: at })
      .onConflict((oc) => {
        const update = oc
          .column('user_id')
          .doUpdateSet({ hash, failed_attempts: 0, locked_at: null, updated_at: at });
        return options.clearLock
          ? update
          : update.where('pins.failed_attempts', '<', MAX_PIN_ATTEMPTS).where('pins.locked_at', 'is', null);
      })
      .returning('user_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Deletes the PIN; a locked one only when `clearLock` is true (as for `upsert`). */
  async remove(userId: string, options: { clearLock: boolean }): Promise<boolean> {
    let query = this.db.kysely.deleteFrom('pins').where('user_id', '=', userId);
    if (!options.clearLock) {
      query = query.where('failed_attempts', '<', MAX_PIN_ATTEMPTS).where('locked_at', 'is', null);
    }
    const result = await query.executeTakeFirst();
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
