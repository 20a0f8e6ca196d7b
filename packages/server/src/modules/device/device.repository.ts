import type { Db } from '../../db/connect.js';
import type { Device } from '../../db/schema.js';
import type { SessionRepository } from '../session/session.repository.js';

export class DeviceRepository {
  constructor(
    private readonly db: Db,
    private readonly sessions: SessionRepository,
  ) {}

  /** Inserts a device; false when this key is already registered in the project. */
  async insert(device: Device): Promise<boolean> {
    const result = await this.db.kysely
      .insertInto('devices')
      .values(device)
      .onConflict((oc) => oc.columns(['project_id', 'thumbprint']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  find(projectId: string, id: string): Promise<Device | undefined> {
    return this.db.kysely
      .selectFrom('devices')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
  }

  listByUser(userId: string): Promise<Device[]> {
    return this.db.kysely
      .selectFrom('devices')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .execute();
  }

  async rename(userId: string, id: string, name: string): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('devices')
      .set({ name })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async touch(id: string, at: number): Promise<void> {
    await this.db.kysely.updateTable('devices').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  /** Deletes a device and revokes the sessions it started, in one transaction. */
  async remove(userId: string, id: string, at: number): Promise<string[] | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const deleted = await trx
        .deleteFrom('devices')
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      if (deleted.numDeletedRows === 0n) return undefined;
      return this.sessions.revokeWhere((q) => q.where('device_id', '=', id), 'device_removed', at, trx);
    });
  }
}
