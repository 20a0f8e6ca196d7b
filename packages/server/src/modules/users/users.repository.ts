import type { Db } from '../../db/connect.js';
import type { User } from '../../db/schema.js';

export class UsersRepository {
  constructor(private readonly db: Db) {}

  findById(id: string): Promise<User | undefined> {
    return this.db.kysely.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByIdentifier(projectId: string, identifier: string): Promise<User | undefined> {
    return this.db.kysely
      .selectFrom('users')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('identifier', '=', identifier)
      .executeTakeFirst();
  }

  /**
   * Records a sign-in by identifier: creates the user on the first one, otherwise sets its
   * `last_sign_in_at` (from `user`); returns the stored user. One statement, safe under concurrent
   * first sign-ins (exactly one row is created).
   */
  signIn(user: User): Promise<User> {
    return this.db.kysely
      .insertInto('users')
      .values(user)
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'identifier'])
          .doUpdateSet((eb) => ({ last_sign_in_at: eb.ref('excluded.last_sign_in_at') })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async touchSignIn(id: string, at: number): Promise<void> {
    await this.db.kysely.updateTable('users').set({ last_sign_in_at: at }).where('id', '=', id).execute();
  }
}
