import { type Kysely, sql } from 'kysely';
import type { Db } from '../../db/connect.js';
import { prepared } from '../../db/prepared.js';
import type { Database, User } from '../../db/schema.js';

const upsertOnSignIn = prepared(
  (
    db,
    id: string,
    projectId: string,
    identifier: string,
    identifierType: User['identifier_type'],
    clientUserId: string | null,
    createdAt: number,
    lastSignInAt: number | null,
  ) =>
    db
      .insertInto('users')
      .values({
        id,
        project_id: projectId,
        identifier,
        identifier_type: identifierType,
        client_user_id: clientUserId,
        created_at: createdAt,
        last_sign_in_at: lastSignInAt,
      })
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'identifier'])
          .doUpdateSet((eb) => ({ last_sign_in_at: eb.ref('excluded.last_sign_in_at') })),
      )
      .returningAll(),
);

export class UsersRepository {
  constructor(private readonly db: Db) {}

  findById(id: string): Promise<User | undefined> {
    return this.db.kysely.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Users of the project whose identifier starts with `query`, or whose user id or client_user_id
   * is `query` exactly (the console's search, issue 33), by identifier.
   */
  search(projectId: string, query: string, limit: number): Promise<User[]> {
    // Identifiers are stored lower-cased (e-mail) or as digits after `+` (phone).
    const prefix = query.normalize('NFC').toLowerCase();
    const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return this.db.kysely
      .selectFrom('users')
      .selectAll()
      .where('project_id', '=', projectId)
      .where((eb) =>
        eb.or([
          eb('identifier', 'like', sql<string>`${pattern} escape '\\'`),
          eb('id', '=', query),
          eb('client_user_id', '=', query),
        ]),
      )
      .orderBy('identifier')
      .limit(limit)
      .execute();
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
  async signIn(user: User): Promise<User> {
    const [row] = (
      await upsertOnSignIn(
        this.db.kysely,
        user.id,
        user.project_id,
        user.identifier,
        user.identifier_type,
        user.client_user_id,
        user.created_at,
        user.last_sign_in_at,
      )
    ).rows;
    if (!row) throw new Error('user upsert returned no row');
    return row;
  }

  async touchSignIn(id: string, at: number): Promise<void> {
    await this.db.kysely.updateTable('users').set({ last_sign_in_at: at }).where('id', '=', id).execute();
  }

  async setClientUserId(id: string, clientUserId: string | null): Promise<void> {
    await this.db.kysely
      .updateTable('users')
      .set({ client_user_id: clientUserId })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Deletes a user (its PIN, devices, passkeys, claims and sessions go by cascade) and its
   * one-time-code challenges, which name the identifier in clear and have no foreign key to the
   * user. Runs on the caller's transaction, which revokes the sessions first.
   */
  async erase(trx: Kysely<Database>, user: Pick<User, 'id' | 'project_id' | 'identifier'>): Promise<void> {
    await trx.deleteFrom('users').where('id', '=', user.id).execute();
    await trx
      .deleteFrom('otp_challenges')
      .where('project_id', '=', user.project_id)
      .where('identifier', '=', user.identifier)
      .execute();
  }
}
