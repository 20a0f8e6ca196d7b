import type { Config } from '../config/index.js';
import type { Db } from '../db/connect.js';
import type { KeyStore } from './key-store.js';

/** A rotation is already under way: its key is published and not yet signing. */
export class RotationPendingError extends Error {
  override name = 'RotationPendingError';
  constructor(readonly kid: string) {
    super(
      `key ${kid} is already published and waiting to sign; a second rotation would skip its cache delay`,
    );
  }
}

/**
 * Publishes a new key as `next`: it appears in the JWKS at once and starts signing after
 * `delaySeconds`, so caches of the JWKS hold it before any token it signed reaches them.
 */
export async function rotateKeys(
  store: KeyStore,
  config: Readonly<Config>,
  delaySeconds?: number,
  now = Date.now(),
): Promise<string> {
  const delay = delaySeconds ?? config.keys.rotationDelay;
  const kid = await store.insertKey('next', now + delay * 1000);
  await advanceKeys(store.db, config, now);
  await store.reload();
  return kid;
}

/**
 * Moves keys along their life: a due `next` key becomes `active` and the key it replaces becomes
 * `retiring`, published until the last token it signed has expired, then `retired`. Every step is
 * a conditional update, so any number of instances may run this at once.
 */
export async function advanceKeys(db: Db, config: Readonly<Config>, now = Date.now()): Promise<boolean> {
  const lifetime = (Math.max(config.accessTokenTtl, config.idTokenTtl) + config.clockLeeway) * 1000;
  return db.kysely.transaction().execute(async (trx) => {
    let changed = false;
    const due = await trx
      .selectFrom('signing_keys')
      .select('kid')
      .where('status', '=', 'next')
      .where('activate_at', '<=', now)
      .orderBy('activate_at', 'desc')
      .executeTakeFirst();
    if (due) {
      const promoted = await trx
        .updateTable('signing_keys')
        .set({ status: 'active', activated_at: now })
        .where('kid', '=', due.kid)
        .where('status', '=', 'next')
        .executeTakeFirst();
      if (promoted.numUpdatedRows > 0n) {
        changed = true;
        await trx
          .updateTable('signing_keys')
          .set({ status: 'retiring', retire_at: now + lifetime })
          .where('status', '=', 'active')
          .where('kid', '!=', due.kid)
          .execute();
      }
    }
    const retired = await trx
      .updateTable('signing_keys')
      .set({ status: 'retired' })
      .where('status', '=', 'retiring')
      .where('retire_at', '<=', now)
      .executeTakeFirst();
    return changed || retired.numUpdatedRows > 0n;
  });
}
