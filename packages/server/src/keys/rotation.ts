import type { Config } from '../config/index.js';
import { Channels, notifyChange } from '../db/channels.js';
import type { Db } from '../db/connect.js';
import { dueLast, type KeyStore, signingDueAt } from './key-store.js';
import * as keysRepository from './keys.repository.js';

/**
 * Publishes a new key as `next`: it appears in the JWKS at once and starts signing after
 * `delaySeconds`, so caches of the JWKS hold it before any token it signed reaches them. On
 * PostgreSQL the other instances are notified and reload their keys at once.
 */
export async function rotateKeys(
  store: KeyStore,
  config: Readonly<Config>,
  delaySeconds?: number,
  now = Date.now(),
): Promise<string> {
  const delay = delaySeconds ?? config.keys.rotationDelay;
  const kid = await store.insertKey('next', now + delay * 1000);
  await notifyChange(store.db.kysely, Channels.keys);
  await advanceKeys(store.db, config, now);
  await store.reload();
  return kid;
}

/**
 * Every instance runs housekeeping this often (app.ts); each run advances the keys and then
 * reloads the instance's key store.
 */
export const HOUSEKEEPING_INTERVAL_MS = 60_000;

/**
 * How long after a key is promoted in the database an instance may still sign with the key it
 * replaced. An instance that has loaded the `next` key switches at its `activate_at` by itself
 * (KeyStore.signingKey), before the promotion; one that had not loaded it yet (a delay shorter than
 * a housekeeping interval), or that only switches when it sees the promotion, does so at its next
 * reload: within one interval of the promotion, plus however long its housekeeping run takes to
 * reach the reload. The second interval covers a slow run, or a run that failed before reloading.
 */
export const KEY_SWITCH_ALLOWANCE_MS = 2 * HOUSEKEEPING_INTERVAL_MS;

/** The longest a token lives, verification leeway included, in ms. */
export const tokenLifetimeMs = (config: Readonly<Config>): number =>
  (Math.max(config.accessTokenTtl, config.idTokenTtl) + config.clockLeeway) * 1000;

/**
 * Moves keys along their life: of the `active` key and the `next` keys whose time has come, the one
 * due last (the same choice as KeyStore.signingKey) becomes `active`; every other of them becomes
 * `retiring`, published until the last token it can have signed has expired — until every instance
 * has stopped signing with it (KEY_SWITCH_ALLOWANCE_MS after now) plus a token lifetime and the
 * leeway — and then `retired`. Every step is a conditional update, so any number of instances may
 * run this at once. A change is notified to the other instances (PostgreSQL) when it commits.
 */
export async function advanceKeys(db: Db, config: Readonly<Config>, now = Date.now()): Promise<boolean> {
  const retireAt = now + KEY_SWITCH_ALLOWANCE_MS + tokenLifetimeMs(config);
  return db.kysely.transaction().execute(async (trx) => {
    let changed = false;
    const keys = await keysRepository.listSigningCandidates(trx);
    const signing = dueLast(keys, (key) => signingDueAt(key.status, key.activateAt, key.activatedAt, now));
    if (signing) {
      let active = signing.status === 'active';
      if (!active) {
        active = await keysRepository.promote(trx, signing.kid, now);
        changed = active;
      }
      // The key it replaces, and any `next` key whose time came but that a later one overtook
      // (instances may have signed with it meanwhile).
      if (active && (await keysRepository.retireReplaced(trx, signing.kid, now, retireAt))) changed = true;
    }
    const retired = await keysRepository.retireDue(trx, now);
    if (changed || retired) await notifyChange(trx, Channels.keys);
    return changed || retired;
  });
}
