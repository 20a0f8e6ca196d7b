import type { Db } from '../../db/connect.js';
import type { Project, ProjectTable } from '../../db/schema.js';

export class ProjectsRepository {
  constructor(private readonly db: Db) {}

  async insert(project: ProjectTable): Promise<void> {
    await this.db.kysely.insertInto('projects').values(project).execute();
  }

  findByApiKeyId(apiKeyId: string): Promise<Project | undefined> {
    return this.db.kysely
      .selectFrom('projects')
      .selectAll()
      .where('api_key_id', '=', apiKeyId)
      .executeTakeFirst();
  }

  findById(id: string): Promise<Project | undefined> {
    return this.db.kysely.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByName(name: string): Promise<Project | undefined> {
    return this.db.kysely.selectFrom('projects').selectAll().where('name', '=', name).executeTakeFirst();
  }

  list(): Promise<Project[]> {
    return this.db.kysely.selectFrom('projects').selectAll().orderBy('created_at', 'asc').execute();
  }

  async setSecretHash(id: string, secretHash: string, at: number): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('projects')
      .set({ secret_hash: secretHash, secret_rotated_at: at })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Every origin any project allows (CORS preflights carry no API key). */
  async allOrigins(): Promise<Set<string>> {
    const rows = await this.db.kysely.selectFrom('projects').select('origins').execute();
    return new Set(rows.flatMap((r) => JSON.parse(r.origins) as string[]));
  }
}
