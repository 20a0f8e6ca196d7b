import type { JsonWebKey } from 'node:crypto';
import type { Db } from '../../db/connect.js';
import type { Device, DeviceRow } from '../../db/schema.js';
import { type Executor, revokeDeviceSessions } from '../session/session.repository.js';

/** The stored JWK is parsed here, once: services see a key, never a JSON column. */
const toDevice = (row: DeviceRow): Device => ({
  ...row,
  public_jwk: JSON.parse(row.public_jwk) as JsonWebKey,
});

export class DeviceRepository {
  constructor(private readonly db: Db) {}

  /** Inserts a device; false when this key is already registered in the project. */
  async insert(device: Device): Promise<boolean> {
    const result = await this.db.kysely
      .insertInto('devices')
      .values({ ...device, public_jwk: JSON.stringify(device.public_jwk) })
      .onConflict((oc) => oc.columns(['project_id', 'thumbprint']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async find(projectId: string, id: string): Promise<Device | undefined> {
    const row = await this.db.kysely
      .selectFrom('devices')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return row && toDevice(row);
  }

  async listByUser(userId: string): Promise<Device[]> {
    const rows = await this.db.kysely
      .selectFrom('devices')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .execute();
    return rows.map(toDevice);
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
      return revokeDeviceSessions(trx, id, 'device_removed', at);
    });
  }
}

/** Deletes every trusted device of a user (sign out everywhere and forget devices); returns their ids. */
export async function removeUserDevices(executor: Executor, userId: string): Promise<string[]> {
  const rows = await executor.deleteFrom('devices').where('user_id', '=', userId).returning('id').execute();
  return rows.map((r) => r.id);
}
