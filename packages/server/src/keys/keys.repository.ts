import { type JsonWebKey, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, SigningKeyRow, SigningKeyStatus } from '../db/schema.js';

/** The public half of a signing key, as published in the JWKS. */
export interface PublicJwk extends JsonWebKey {
  kid: string;
  kty: 'EC';
  crv: 'P-256';
  alg: 'ES256';
  use: 'sig';
}

/** A signing key as stored: its public JWK parsed once, here; the private JWK still sealed. */
export interface StoredSigningKey {
  kid: string;
  status: SigningKeyStatus;
  publicJwk: PublicJwk;
  /** AES-256-GCM of the private JWK, bound to the kid (KeyStore opens it). */
  privateEnc: string;
  createdAt: number;
  activateAt: number | null;
  activatedAt: number | null;
  retireAt: number | null;
}

/** The life-cycle fields advanceKeys decides on. */
export type KeyState = Pick<StoredSigningKey, 'kid' | 'status' | 'activateAt' | 'activatedAt'>;

function toKey(row: SigningKeyRow): StoredSigningKey {
  return {
    kid: row.kid,
    status: row.status,
    publicJwk: JSON.parse(row.public_jwk) as PublicJwk,
    privateEnc: row.private_enc,
    createdAt: row.created_at,
    activateAt: row.activate_at,
    activatedAt: row.activated_at,
    retireAt: row.retire_at,
  };
}

/** The keys that are not retired (published or about to be), oldest first, ties by kid. */
export async function listPublished(db: Kysely<Database>): Promise<StoredSigningKey[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .selectAll()
    .where('status', '!=', 'retired')
    .orderBy('created_at', 'asc')
    .orderBy('kid', 'asc')
    .execute();
  return rows.map(toKey);
}

/** Every key's kid and status, retired ones included. */
export function listKids(db: Kysely<Database>): Promise<Array<{ kid: string; status: SigningKeyStatus }>> {
  return db.selectFrom('signing_keys').select(['kid', 'status']).execute();
}

/**
 * Stores a key. With `ifAbsent`, inserting a kid that exists already does nothing (racing
 * instances creating the same first key: one insert wins).
 */
export async function insert(
  db: Kysely<Database>,
  key: StoredSigningKey,
  options: { ifAbsent?: boolean } = {},
): Promise<void> {
  const insert = db.insertInto('signing_keys').values({
    kid: key.kid,
    alg: key.publicJwk.alg,
    public_jwk: JSON.stringify(key.publicJwk),
    private_enc: key.privateEnc,
    status: key.status,
    created_at: key.createdAt,
    activate_at: key.activateAt,
    activated_at: key.activatedAt,
    retire_at: key.retireAt,
  });
  await (options.ifAbsent ? insert.onConflict((oc) => oc.column('kid').doNothing()) : insert).execute();
}

/** The `active` and `next` keys, oldest first, ties by kid (the order KeyStore loads them in). */
export async function listSigningCandidates(db: Kysely<Database>): Promise<KeyState[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'status', 'activate_at', 'activated_at'])
    .where('status', 'in', ['active', 'next'])
    .orderBy('created_at', 'asc')
    .orderBy('kid', 'asc')
    .execute();
  return rows.map((r) => ({
    kid: r.kid,
    status: r.status,
    activateAt: r.activate_at,
    activatedAt: r.activated_at,
  }));
}

/** `next → active`, if the key is still `next` (another instance may have promoted it). */
export async function promote(db: Kysely<Database>, kid: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('signing_keys')
    .set({ status: 'active', activated_at: now })
    .where('kid', '=', kid)
    .where('status', '=', 'next')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Every key other than `signing` that has signed or may have (the `active` one, and `next` keys
 * due by `now`) becomes `retiring` until `retireAt`; returns whether any did.
 */
export async function retireReplaced(
  db: Kysely<Database>,
  signing: string,
  now: number,
  retireAt: number,
): Promise<boolean> {
  const result = await db
    .updateTable('signing_keys')
    .set({ status: 'retiring', retire_at: retireAt })
    .where('kid', '!=', signing)
    .where((eb) =>
      eb.or([eb('status', '=', 'active'), eb.and([eb('status', '=', 'next'), eb('activate_at', '<=', now)])]),
    )
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** `retiring → retired` for keys whose `retire_at` has passed; returns whether any did. */
export async function retireDue(db: Kysely<Database>, now: number): Promise<boolean> {
  const result = await db
    .updateTable('signing_keys')
    .set({ status: 'retired' })
    .where('status', '=', 'retiring')
    .where('retire_at', '<=', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The database's random id (migration 016), made here if its row is missing; racers agree. */
export async function databaseId(db: Kysely<Database>): Promise<string> {
  const read = () =>
    db.selectFrom('database_identity').select('database_id').where('id', '=', 1).executeTakeFirst();
  const found = await read();
  if (found) return found.database_id;
  await db
    .insertInto('database_identity')
    .values({ id: 1, database_id: randomBytes(16).toString('base64url'), created_at: Date.now() })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const made = await read();
  if (!made) throw new Error('the database has no id (database_identity)');
  return made.database_id;
}
