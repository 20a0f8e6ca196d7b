import type { Db } from '../../db/connect.js';
import type { Passkey, PasskeyRow } from '../../db/schema.js';
import { revokePasskeySessions } from '../session/session.repository.js';

/** The stored transports are parsed here, once. */
const toPasskey = (row: PasskeyRow): Passkey => ({
  ...row,
  transports: JSON.parse(row.transports) as string[],
});

export class PasskeyRepository {
  constructor(private readonly db: Db) {}

  /** False when the credential id is already registered. */
  async insert(passkey: Passkey): Promise<boolean> {
    const result = await this.db.kysely
      .insertInto('passkeys')
      .values({ ...passkey, transports: JSON.stringify(passkey.transports) })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async find(projectId: string, id: string): Promise<Passkey | undefined> {
    const row = await this.db.kysely
      .selectFrom('passkeys')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return row && toPasskey(row);
  }

  async listByUser(userId: string): Promise<Passkey[]> {
    const rows = await this.db.kysely
      .selectFrom('passkeys')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .execute();
    return rows.map(toPasskey);
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

  /** Deletes a passkey and revokes the sessions it started, in one transaction. */
  async remove(userId: string, id: string, at: number): Promise<string[] | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const deleted = await trx
        .deleteFrom('passkeys')
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      if (deleted.numDeletedRows === 0n) return undefined;
      return revokePasskeySessions(trx, id, 'passkey_removed', at);
    });
  }
}
