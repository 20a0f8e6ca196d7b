import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';
import type { ConsoleRole } from '../../db/schema.js';

/** A console member row with its project's API key id and name (null for an operator). */
export interface ConsoleMember {
  id: string;
  identifier: string;
  user_id: string | null;
  role: ConsoleRole;
  project_id: string | null;
  api_key_id: string | null;
  project_name: string | null;
  created_at: number;
}

export class ConsoleMembersRepository {
  constructor(private readonly db: Db) {}

  #select() {
    return this.db.kysely
      .selectFrom('console_members as m')
      .leftJoin('projects as p', 'p.id', 'm.project_id')
      .select([
        'm.id',
        'm.identifier',
        'm.user_id',
        'm.role',
        'm.project_id',
        'm.created_at',
        'p.api_key_id',
        'p.name as project_name',
      ]);
  }

  /** Every member row, by identifier. */
  async list(): Promise<ConsoleMember[]> {
    const rows = await this.#select().orderBy('m.identifier').orderBy('m.created_at').execute();
    return rows.map(toMember);
  }

  /** The rows of a console user: bound to them, or naming their identifier and not yet bound. */
  async forUser(userId: string, identifier: string): Promise<ConsoleMember[]> {
    const rows = await this.#select()
      .where((eb) =>
        eb.or([
          eb('m.user_id', '=', userId),
          eb.and([eb('m.user_id', 'is', null), eb('m.identifier', '=', identifier)]),
        ]),
      )
      .execute();
    return rows.map(toMember);
  }

  /** Binds the identifier's unbound rows to the console user who signed in with it. */
  async bind(userId: string, identifier: string): Promise<void> {
    await this.db.kysely
      .updateTable('console_members')
      .set({ user_id: userId })
      .where('identifier', '=', identifier)
      .where('user_id', 'is', null)
      .execute();
  }

  /** Adds a role unless the identifier already holds it there; true when added. */
  async grant(
    identifier: string,
    role: ConsoleRole,
    projectId: string | null,
    now: number,
  ): Promise<boolean> {
    const existing = await this.#rows(identifier, projectId).where('role', '=', role).executeTakeFirst();
    if (existing) return false;
    await this.db.kysely
      .insertInto('console_members')
      .values({ id: randomId('cm'), identifier, user_id: null, role, project_id: projectId, created_at: now })
      .execute();
    return true;
  }

  /** Removes the identifier's roles there (one role, or all of them); how many rows went. */
  async revoke(identifier: string, projectId: string | null, role?: ConsoleRole): Promise<number> {
    let query = this.db.kysely.deleteFrom('console_members').where('identifier', '=', identifier);
    query =
      projectId === null ? query.where('project_id', 'is', null) : query.where('project_id', '=', projectId);
    if (role) query = query.where('role', '=', role);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Removes every role of the identifier; how many rows went. */
  async revokeAll(identifier: string): Promise<number> {
    const result = await this.db.kysely
      .deleteFrom('console_members')
      .where('identifier', '=', identifier)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  #rows(identifier: string, projectId: string | null) {
    const query = this.db.kysely
      .selectFrom('console_members')
      .select('id')
      .where('identifier', '=', identifier);
    return projectId === null
      ? query.where('project_id', 'is', null)
      : query.where('project_id', '=', projectId);
  }
}

function toMember(row: {
  id: string;
  identifier: string;
  user_id: string | null;
  role: ConsoleRole;
  project_id: string | null;
  created_at: number | string;
  api_key_id: string | null;
  project_name: string | null;
}): ConsoleMember {
  return { ...row, created_at: Number(row.created_at) };
}
