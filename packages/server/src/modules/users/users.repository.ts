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

  /** The user with this identifier, created on first sign-in (safe under concurrent first sign-ins). */
  async findOrCreate(user: User): Promise<User> {
    await this.db.kysely
      .insertInto('users')
      .values(user)
      .onConflict((oc) => oc.columns(['project_id', 'identifier']).doNothing())
      .execute();
    const found = await this.findByIdentifier(user.project_id, user.identifier);
    if (!found) throw new Error('user vanished after upsert');
    return found;
  }

  async touchSignIn(id: string, at: number): Promise<void> {
    await this.db.kysely.updateTable('users').set({ last_sign_in_at: at }).where('id', '=', id).execute();
  }
}
