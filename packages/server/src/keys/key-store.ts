import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hkdfSync,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { open, seal } from '../crypto/master-key.js';
import { randomToken } from '../crypto/random.js';
import type { Db } from '../db/connect.js';
import type { SigningKeyRow } from '../db/schema.js';

export interface PublicJwk extends JsonWebKey {
  kid: string;
  kty: 'EC';
  crv: 'P-256';
  alg: 'ES256';
  use: 'sig';
}

export interface SigningKey {
  kid: string;
  status: SigningKeyRow['status'];
  publicJwk: PublicJwk;
  publicKey: KeyObject;
  /** Loaded only for the keys that sign or may start signing: `active` and `next`. */
  privateKey?: KeyObject;
  /** When a `next` key starts signing (null for the first key). */
  activateAt: number | null;
  activatedAt: number | null;
  retireAt: number | null;
}

/**
 * Since when a key has been due to sign at `now`, or undefined if it may not sign: an `active` key
 * since it was due (or promoted, for the first key), a `next` key once its `activate_at` has
 * passed. Of several keys the one due last signs (KeyStore.signingKey, advanceKeys), so a key
 * published with a delay still takes over when its time comes after a later `--delay 0` rotation.
 */
export function signingDueAt(
  status: SigningKeyRow['status'],
  activateAt: number | null,
  activatedAt: number | null,
  now: number,
): number | undefined {
  if (status === 'active') return activateAt ?? activatedAt ?? Number.NEGATIVE_INFINITY;
  if (status === 'next' && activateAt !== null && activateAt <= now) return activateAt;
  return undefined;
}

/** Of the keys due to sign (`dueAt` defined), the one due last; oldest first, so of keys due at once the last listed. */
export function dueLast<K>(keys: readonly K[], dueAt: (key: K) => number | undefined): K | undefined {
  let best: K | undefined;
  let bestDue = Number.NEGATIVE_INFINITY;
  for (const key of keys) {
    const due = dueAt(key);
    if (due !== undefined && due >= bestDue) {
      best = key;
      bestDue = due;
    }
  }
  return best;
}

/**
 * The issuer's ES256 keys. Private keys are stored sealed with AES-256-GCM under a key derived
 * from the master key, bound to their kid. Every instance reads the same rows, so several
 * processes agree on the signing key through the database.
 */
export class KeyStore {
  #keys: SigningKey[] = [];
  #byKid = new Map<string, SigningKey>();
  #jwksJson = '{"keys":[]}';
  #loadedAt = 0;
  #loading: Promise<void> | undefined;

  constructor(
    readonly db: Db,
    private readonly encryptionKey: Buffer,
    private readonly now: () => number = Date.now,
  ) {}

  /** Loads keys, creating the first one if the issuer has none yet. */
  async init(): Promise<void> {
    await this.reload();
    if (this.#keys.some((k) => k.status === 'active')) return;
    // Instances starting together on an empty database must not each create an active key (they
    // would sign with different keys and publish different JWKS). The first key's kid is derived
    // from the rows every racer sees, so they compute the same kid and the primary key lets one
    // insert win; the others load the winner's key.
    const seen = await this.db.kysely.selectFrom('signing_keys').select(['kid', 'status']).execute();
    if (!seen.some((r) => r.status === 'active')) {
      await this.insertKey('active', null, this.#firstKid(seen.map((r) => r.kid)));
    }
    await this.reload();
    if (!this.#keys.some((k) => k.status === 'active')) {
      await this.insertKey('active');
      await this.reload();
    }
  }

  #firstKid(existing: string[]): string {
    const key = Buffer.from(hkdfSync('sha256', this.encryptionKey, Buffer.alloc(0), 'tessera/first-kid', 32));
    return createHmac('sha256', key)
      .update(existing.sort().join('\0'))
      .digest()
      .subarray(0, 12)
      .toString('base64url');
  }

  /** Re-reads the key rows (after a rotation elsewhere, or a kid this instance does not know). */
  reload(): Promise<void> {
    this.#loading ??= this.#load().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #load(): Promise<void> {
    const rows = await this.db.kysely
      .selectFrom('signing_keys')
      .selectAll()
      .where('status', '!=', 'retired')
      .orderBy('created_at', 'asc')
      .orderBy('kid', 'asc')
      .execute();
    const keys = rows.map((row) => this.#fromRow(row));
    this.#keys = keys;
    this.#byKid = new Map(keys.map((k) => [k.kid, k]));
    this.#jwksJson = JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
    this.#loadedAt = this.now();
  }

  #fromRow(row: SigningKeyRow): SigningKey {
    const publicJwk = JSON.parse(row.public_jwk) as PublicJwk;
    const key: SigningKey = {
      kid: row.kid,
      status: row.status,
      publicJwk,
      publicKey: createPublicKey({ key: publicJwk, format: 'jwk' }),
      activateAt: row.activate_at,
      activatedAt: row.activated_at,
      retireAt: row.retire_at,
    };
    if (row.status === 'active' || row.status === 'next') {
      const jwk = JSON.parse(open(this.encryptionKey, row.private_enc, row.kid)) as JsonWebKey;
      key.privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
    }
    return key;
  }

  /**
   * Generates a P-256 key pair and stores it sealed. With a given `kid` the insert does nothing
   * when that kid exists already (the first key, see init).
   */
  async insertKey(
    status: 'active' | 'next',
    activateAt: number | null = null,
    givenKid?: string,
  ): Promise<string> {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const kid = givenKid ?? randomToken(12);
    const { x, y } = publicKey.export({ format: 'jwk' });
    const publicJwk: PublicJwk = { kty: 'EC', crv: 'P-256', x, y, kid, alg: 'ES256', use: 'sig' };
    const now = this.now();
    const insert = this.db.kysely.insertInto('signing_keys').values({
      kid,
      alg: 'ES256',
      public_jwk: JSON.stringify(publicJwk),
      private_enc: seal(this.encryptionKey, JSON.stringify(privateKey.export({ format: 'jwk' })), kid),
      status,
      created_at: now,
      activate_at: activateAt,
      activated_at: status === 'active' ? now : null,
      retire_at: null,
    });
    await (givenKid ? insert.onConflict((oc) => oc.column('kid').doNothing()) : insert).execute();
    return kid;
  }

  /**
   * The key that signs new tokens, by this store's clock: of the `active` keys and the `next` keys
   * whose `activate_at` has passed, the one that became due last. A `next` key is loaded (and
   * published) from the first reload after its rotation, so every instance that has loaded it
   * switches to it at `activate_at` by itself, without waiting for a housekeeping run to promote
   * it in the database and for its own next reload to see that.
   */
  signingKey(): SigningKey & { privateKey: KeyObject } {
    const now = this.now();
    // Oldest first (ties by kid, as advanceKeys reads them), so of keys due at once the newest wins.
    const best = dueLast(this.#keys, (key) =>
      key.privateKey ? signingDueAt(key.status, key.activateAt, key.activatedAt, now) : undefined,
    );
    if (!best) throw new Error('no active signing key is loaded');
    return best as SigningKey & { privateKey: KeyObject };
  }

  /** A published (non-retired) key by kid, for verification. */
  get(kid: string): SigningKey | undefined {
    return this.#byKid.get(kid);
  }

  /** Milliseconds since the key rows were last read. */
  age(): number {
    return this.now() - this.#loadedAt;
  }

  list(): readonly SigningKey[] {
    return this.#keys;
  }

  /** The JWKS document, serialised once per load. */
  jwksJson(): string {
    return this.#jwksJson;
  }
}
