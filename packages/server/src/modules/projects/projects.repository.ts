import { Channels, notifyChange } from '../../db/channels.js';
import type { Db } from '../../db/connect.js';
import { type Project, toProject } from './project.js';

/** The settings an update may change. */
export type ProjectUpdate = Partial<
  Pick<
    Project,
    | 'name'
    | 'origins'
    | 'rp_id'
    | 'numeric_auth_time'
    | 'device_requires_pin'
    | 'message_templates'
    | 'branding'
    | 'oauth_dcr'
    | 'oauth_cimd'
    | 'sms_countries'
    | 'access_token_ttl'
    | 'id_token_ttl'
    | 'refresh_token_ttl'
  >
>;

/** A unique index refused the write (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

export class ProjectsRepository {
  constructor(private readonly db: Db) {}

  async insert(project: Project): Promise<void> {
    await this.db.kysely
      .insertInto('projects')
      .values({
        ...project,
        origins: JSON.stringify(project.origins),
        sms_countries: project.sms_countries === null ? null : JSON.stringify(project.sms_countries),
        message_templates:
          project.message_templates === null ? null : JSON.stringify(project.message_templates),
        branding: project.branding === null ? null : JSON.stringify(project.branding),
      })
      .execute();
  }

  async findByApiKeyId(apiKeyId: string): Promise<Project | undefined> {
    const row = await this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .where('api_key_id', '=', apiKeyId)
      .executeTakeFirst();
    return row && toProject(row);
  }

  async findById(id: string): Promise<Project | undefined> {
    const row = await this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toProject(row);
  }

  async findByName(name: string): Promise<Project | undefined> {
    const row = await this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .where('name', '=', name)
      .executeTakeFirst();
    return row && toProject(row);
  }

  /** The built-in console project (issue 33), marked when the server created it. */
  async findConsole(): Promise<Project | undefined> {
    const row = await this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .where('console', '=', 1)
      .orderBy('created_at', 'asc')
      .executeTakeFirst();
    return row && toProject(row);
  }

  async list(): Promise<Project[]> {
    const rows = await this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .orderBy('created_at', 'asc')
      .execute();
    return rows.map(toProject);
  }

  async setSecretHash(id: string, secretHash: string, at: number): Promise<boolean> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('projects')
        .set({ secret_hash: secretHash, secret_rotated_at: at })
        .where('id', '=', id)
        .returning('api_key_id')
        .executeTakeFirst();
      if (result) await notifyChange(trx, Channels.projects, { id, api_key_id: result.api_key_id });
      return result !== undefined;
    });
  }

  /**
   * Applies `change` (computed from the project as it is now) in one transaction, so concurrent
   * updates of the origin list do not lose each other's changes. Undefined when there is no such
   * project; `change` may throw to refuse.
   */
  async update(apiKeyId: string, change: (project: Project) => ProjectUpdate): Promise<Project | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('projects')
        .selectAll()
        .where('api_key_id', '=', apiKeyId)
        .executeTakeFirst();
      if (!row) return undefined;
      const project = toProject(row);
      const fields = change(project);
      const { origins, message_templates: templates, branding, sms_countries: countries, ...rest } = fields;
      await trx
        .updateTable('projects')
        .set({
          ...rest,
          ...(origins ? { origins: JSON.stringify(origins) } : {}),
          ...(templates !== undefined ? { message_templates: templates && JSON.stringify(templates) } : {}),
          ...(branding !== undefined ? { branding: branding && JSON.stringify(branding) } : {}),
          ...(countries !== undefined ? { sms_countries: countries && JSON.stringify(countries) } : {}),
        })
        .where('id', '=', project.id)
        .execute();
      await notifyChange(trx, Channels.projects, { id: project.id, api_key_id: project.api_key_id });
      return { ...project, ...fields };
    });
  }

  /**
   * Deletes a project with everything of it: its users and, through the schema's cascades, their
   * sessions, refresh tokens, devices, PINs, passkeys and claims; its OTP and WebAuthn challenges;
   * its webhook endpoints and their deliveries; and its audit events (which nothing else could
   * read any more). Returns how many users went, or undefined when there was no such project.
   */
  async delete(id: string): Promise<{ users: number } | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const counted = await trx
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('users'))
        .where('project_id', '=', id)
        .executeTakeFirstOrThrow();
      const deleted = await trx
        .deleteFrom('projects')
        .where('id', '=', id)
        .returning('api_key_id')
        .executeTakeFirst();
      if (!deleted) return undefined;
      await trx.deleteFrom('audit_events').where('project_id', '=', id).execute();
      await notifyChange(trx, Channels.projects, { id, api_key_id: deleted.api_key_id });
      return { users: Number(counted.users) };
    });
  }

  /** Every origin any project allows (CORS preflights carry no API key). */
  async allOrigins(): Promise<Set<string>> {
    const rows = await this.db.kysely.selectFrom('projects').select('origins').execute();
    return new Set(rows.flatMap((r) => JSON.parse(r.origins) as string[]));
  }
}
