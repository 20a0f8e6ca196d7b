import type { Kysely } from 'kysely';
import type { Database, OAuthClientTable } from '../../db/schema.js';
import type { OAuthClient } from './client.js';

type Row = OAuthClientTable;

const toClient = (row: Row): OAuthClient => ({
  id: row.id,
  project_id: row.project_id,
  client_id: row.client_id,
  secret_hash: row.secret_hash,
  token_endpoint_auth_method: row.token_endpoint_auth_method,
  name: row.name,
  logo_uri: row.logo_uri,
  redirect_uris: JSON.parse(row.redirect_uris) as string[],
  post_logout_redirect_uris: JSON.parse(row.post_logout_redirect_uris) as string[],
  grant_types: JSON.parse(row.grant_types) as string[],
  scopes: row.scope.split(' ').filter(Boolean),
  first_party: row.first_party === 1,
  dynamic: row.dynamic === 1,
  last_used_at: row.last_used_at === null ? null : Number(row.last_used_at),
  created_at: Number(row.created_at),
  updated_at: Number(row.updated_at),
});

const toRow = (client: OAuthClient): Row => ({
  id: client.id,
  project_id: client.project_id,
  client_id: client.client_id,
  secret_hash: client.secret_hash,
  token_endpoint_auth_method: client.token_endpoint_auth_method,
  name: client.name,
  logo_uri: client.logo_uri,
  redirect_uris: JSON.stringify(client.redirect_uris),
  post_logout_redirect_uris: JSON.stringify(client.post_logout_redirect_uris),
  grant_types: JSON.stringify(client.grant_types),
  scope: client.scopes.join(' '),
  first_party: client.first_party ? 1 : 0,
  dynamic: client.dynamic ? 1 : 0,
  last_used_at: client.last_used_at,
  created_at: client.created_at,
  updated_at: client.updated_at,
});

/** OAuth clients, always within one project (`projectId`) but for the lookup by `client_id`. */
export class ClientsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(client: OAuthClient): Promise<void> {
    await this.db.insertInto('oauth_clients').values(toRow(client)).execute();
  }

  /** The client of a `client_id`, whatever its project (the token and authorization endpoints). */
  async findByClientId(clientId: string): Promise<OAuthClient | undefined> {
    const row = await this.db
      .selectFrom('oauth_clients')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row ? toClient(row) : undefined;
  }

  async listByProject(projectId: string): Promise<OAuthClient[]> {
    const rows = await this.db
      .selectFrom('oauth_clients')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at', 'asc')
      .orderBy('client_id', 'asc')
      .execute();
    return rows.map(toClient);
  }

  async countByProject(projectId: string): Promise<number> {
    const row = await this.db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Clients registered through the open endpoint, for its cap. */
  async countDynamic(projectId: string): Promise<number> {
    const row = await this.db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('project_id', '=', projectId)
      .where('dynamic', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Records that a client was used (the expiry of dynamically registered clients counts from it). */
  async touch(clientId: string, at: number): Promise<void> {
    await this.db
      .updateTable('oauth_clients')
      .set({ last_used_at: at })
      .where('client_id', '=', clientId)
      .execute();
  }

  /** Dynamically registered clients not used since `before` (never used: created before it). */
  async unusedDynamic(
    before: number,
    limit: number,
  ): Promise<Array<{ project_id: string; client_id: string }>> {
    return this.db
      .selectFrom('oauth_clients')
      .select(['project_id', 'client_id'])
      .where('dynamic', '=', 1)
      .where((eb) =>
        eb.or([
          eb('last_used_at', '<', before),
          eb.and([eb('last_used_at', 'is', null), eb('created_at', '<', before)]),
        ]),
      )
      .limit(limit)
      .execute();
  }

  /** Replaces a client's metadata (and secret hash); false when the project has no such client. */
  async replace(client: OAuthClient): Promise<boolean> {
    const {
      id: _id,
      project_id,
      client_id,
      created_at: _created,
      dynamic: _dynamic,
      last_used_at: _used,
      ...changes
    } = toRow(client);
    const result = await this.db
      .updateTable('oauth_clients')
      .set(changes)
      .where('project_id', '=', project_id)
      .where('client_id', '=', client_id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Deletes a client and what was granted to it (consents; its sessions are revoked by the service). */
  async delete(projectId: string, clientId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('oauth_clients')
        .where('project_id', '=', projectId)
        .where('client_id', '=', clientId)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return false;
      await trx
        .deleteFrom('oauth_consents')
        .where('project_id', '=', projectId)
        .where('client_id', '=', clientId)
        .execute();
      await trx
        .deleteFrom('oauth_codes')
        .where('project_id', '=', projectId)
        .where('client_id', '=', clientId)
        .execute();
      return true;
    });
  }
}
