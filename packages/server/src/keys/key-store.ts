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
import type { SigningKeyStatus } from '../db/schema.js';
import type { PublicJwk, StoredSigningKey } from './keys.repository.js';
import * as keysRepository from './keys.repository.js';

export interface SigningKey {
  kid: string;
  status: SigningKeyStatus;
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
  status: SigningKeyStatus,
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
  #reloadAgain: Promise<void> | undefined;

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
    // insert win; the others load the winner's key. The database's random id makes it differ
    // between databases under one master key.
    const seen = await keysRepository.listKids(this.db.kysely);
    if (!seen.some((r) => r.status === 'active')) {
      const databaseId = await keysRepository.databaseId(this.db.kysely);
      await this.insertKey(
        'active',
        null,
        this.#firstKid(
          databaseId,
          seen.map((r) => r.kid),
        ),
      );
    }
    await this.reload();
    if (!this.#keys.some((k) => k.status === 'active')) {
      await this.insertKey('active');
      await this.reload();
    }
  }

  #firstKid(databaseId: string, existing: string[]): string {
    const key = Buffer.from(hkdfSync('sha256', this.encryptionKey, Buffer.alloc(0), 'tessera/first-kid', 32));
    return createHmac('sha256', key)
      .update([databaseId, ...existing.sort()].join('\0'))
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

  /**
   * A reload that reads the rows after this call (a notice says another instance changed them):
   * the reload in flight may have read them before the change, so this one queues behind it;
   * callers meanwhile share the queued one.
   */
  reloadAfterChange(): Promise<void> {
    this.#reloadAgain ??= (this.#loading ?? Promise.resolve())
      .catch(() => {})
      .then(() => {
        this.#reloadAgain = undefined;
        return this.reload();
      });
    return this.#reloadAgain;
  }

  async #load(): Promise<void> {
    const keys = (await keysRepository.listPublished(this.db.kysely)).map((stored) => this.#keyOf(stored));
    this.#keys = keys;
    this.#byKid = new Map(keys.map((k) => [k.kid, k]));
    this.#jwksJson = JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
    this.#loadedAt = this.now();
  }

  /** Makes key objects of a stored key; the private key only for the keys that sign or may start to. */
  #keyOf(stored: StoredSigningKey): SigningKey {
    const key: SigningKey = {
      kid: stored.kid,
      status: stored.status,
      publicJwk: stored.publicJwk,
      publicKey: createPublicKey({ key: stored.publicJwk, format: 'jwk' }),
      activateAt: stored.activateAt,
      activatedAt: stored.activatedAt,
      retireAt: stored.retireAt,
    };
    if (stored.status === 'active' || stored.status === 'next') {
      const jwk = JSON.parse(open(this.encryptionKey, stored.privateEnc, stored.kid)) as JsonWebKey;
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
    await keysRepository.insert(
      this.db.kysely,
      {
        kid,
        status,
        publicJwk,
        privateEnc: seal(this.encryptionKey, JSON.stringify(privateKey.export({ format: 'jwk' })), kid),
        createdAt: now,
        activateAt,
        activatedAt: status === 'active' ? now : null,
        retireAt: null,
      },
      { ifAbsent: givenKid !== undefined },
    );
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
