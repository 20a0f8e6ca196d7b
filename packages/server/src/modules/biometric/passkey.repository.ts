import type { Db } from '../../db/connect.js';
import type { Passkey } from '../../db/schema.js';

export class PasskeyRepository {
  constructor(private readonly db: Db) {}

  /** False when the credential id is already registered. */
  async insert(passkey: Passkey): Promise<boolean> {
    const result = await this.db.kysely
      .insertInto('passkeys')
      .values(passkey)
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  find(projectId: string, id: string): Promise<Passkey | undefined> {
    return this.db.kysely
      .selectFrom('passkeys')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
  }

  listByUser(userId: string): Promise<Passkey[]> {
    return this.db.kysely
      .selectFrom('passkeys')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .execute();
  }

  /**
   * Moves the signature counter forward only: a concurrent use that already moved it past the
   * new value makes this fail (a cloned authenticator, or a replay).
   */
  async advanceCounter(id: string, expected: number, next: number, at: number): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('passkeys')
      .set({ counter: next, last_used_at: at })
      .where('id', '=', id)
      .where('counter', '=', expected)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async remove(userId: string, id: string): Promise<boolean> {
    const result = await this.db.kysely
      .deleteFrom('passkeys')
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
