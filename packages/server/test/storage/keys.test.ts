import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { afterEach, beforeEach, test } from 'node:test';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  type JSONWebKeySet,
  jwtVerify,
} from 'jose';
import { loadConfig } from '../../src/config/index.js';
import { MasterKey, open } from '../../src/crypto/master-key.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { advanceKeys, rotateKeys } from '../../src/keys/rotation.js';
import { signJwt } from '../../src/tokens/jwt.js';
import { createStorage, eachDialect, startServer, type TestStorage } from '../helpers/harness.js';

const ISSUER = 'https://issuer.test';
const DAY = 86_400_000;
const config = loadConfig({ TESSERA_ENV: 'test', TESSERA_DATA_DIR: tmpdir() });

/** A fake clock that only moves forward. */
function fakeClock(start = Date.UTC(2030, 0, 1)) {
  const clock = { t: start, now: () => clock.t };
  return clock;
}

const encryptionKey = (master: MasterKey) => master.derive('signing-key-encryption');
const newMaster = () => new MasterKey(randomBytes(32));

interface Issued {
  token: string;
  kid: string;
  /** Expiry in ms. */
  exp: number;
}

/** Signs an access-token-shaped JWT with the store's current signing key at the clock's time. */
function sign(store: KeyStore, at: number): Issued {
  const key = store.signingKey();
  const iat = Math.floor(at / 1000);
  const exp = iat + config.accessTokenTtl;
  const token = signJwt(
    { alg: 'ES256', kid: key.kid, typ: 'at+jwt' },
    { sub: 'user', aud: 'pk_test', iss: ISSUER, iat, exp, jti: randomBytes(8).toString('hex') },
    key.privateKey,
  );
  return { token, kid: key.kid, exp: exp * 1000 };
}

const jwksOf = (store: KeyStore) => JSON.parse(store.jwksJson()) as JSONWebKeySet;
const kidsOf = (store: KeyStore) => jwksOf(store).keys.map((k) => k.kid);

function verifyAt(jwks: JSONWebKeySet, token: string, at: number) {
  return jwtVerify(token, createLocalJWKSet(jwks), {
    issuer: ISSUER,
    algorithms: ['ES256'],
    currentDate: new Date(at),
  });
}

/** Every token issued so far verifies against the store's JWKS while it lives, and only then. */
async function checkAll(store: KeyStore, issued: Issued[], at: number): Promise<void> {
  const jwks = jwksOf(store);
  for (const item of issued) {
    if (at < item.exp) {
      await verifyAt(jwks, item.token, at);
    } else {
      // Expired: refused for its expiry, or because its key has since left the JWKS.
      const published = jwks.keys.some((k) => k.kid === item.kid);
      await assert.rejects(verifyAt(jwks, item.token, at), {
        code: published ? 'ERR_JWT_EXPIRED' : 'ERR_JWKS_NO_MATCHING_KEY',
      });
    }
  }
}

eachDialect('signing keys in storage', (dialect) => {
  let storage: TestStorage;
  beforeEach(async () => {
    storage = await createStorage(dialect);
  });
  afterEach(() => storage.cleanup());

  const rows = () => storage.db.kysely.selectFrom('signing_keys').selectAll().orderBy('created_at').execute();

  test('private keys are stored sealed under the master key', async () => {
    const clock = fakeClock();
    const master = newMaster();
    const store = new KeyStore(storage.db, encryptionKey(master), clock.now);
    await store.init();
    await rotateKeys(store, config, 60, clock.t);
    const stored = await rows();
    assert.equal(stored.length, 2);
    for (const row of stored) {
      const sealed = open(encryptionKey(master), row.private_enc, row.kid);
      const jwk = JSON.parse(sealed) as { d?: string; x?: string };
      assert.equal(typeof jwk.d, 'string');
      const d = jwk.d!;
      const dBytes = Buffer.from(d, 'base64url');
      const everything = JSON.stringify(row);
      for (const form of [d, dBytes.toString('base64'), dBytes.toString('hex'), '"d"']) {
        assert.equal(everything.includes(form), false, 'the row holds the private key in the clear');
      }
      const publicJwk = JSON.parse(row.public_jwk) as Record<string, unknown>;
      assert.equal('d' in publicJwk, false);
      assert.equal(publicJwk.x, jwk.x);

      // Another master key, a key of another purpose or another kid cannot open it.
      assert.throws(() => open(encryptionKey(newMaster()), row.private_enc, row.kid));
      assert.throws(() => open(master.derive('otp-code-mac'), row.private_enc, row.kid));
      assert.throws(() => open(encryptionKey(master), row.private_enc, `${row.kid}x`));
    }
    // The active key's private key matches what the store signs with.
    const active = stored.find((r) => r.status === 'active')!;
    const loaded = store.signingKey().privateKey.export({ format: 'jwk' });
    assert.equal(JSON.parse(open(encryptionKey(master), active.private_enc, active.kid)).d, loaded.d);
    // A store with another master key cannot load the keys.
    const wrong = new KeyStore(storage.db, encryptionKey(newMaster()), clock.now);
    await assert.rejects(wrong.init());
  });

  test('life cycle: tokens signed before, during and after rotations verify until they expire', async () => {
    const clock = fakeClock();
    const store = new KeyStore(storage.db, encryptionKey(newMaster()), clock.now);
    await store.init();
    const issued: Issued[] = [];
    const lifetime = (Math.max(config.accessTokenTtl, config.idTokenTtl) + config.clockLeeway) * 1000;
    const delay = config.keys.rotationDelay * 1000;

    for (let round = 0; round < 2; round++) {
      const current = store.signingKey().kid;
      issued.push(sign(store, clock.t));
      await checkAll(store, issued, clock.t);

      // A rotation publishes the next key at once, but it does not sign yet.
      clock.t += 60_000;
      const rotatedAt = clock.t;
      const next = await rotateKeys(store, config, undefined, clock.t);
      assert.notEqual(next, current);
      assert.deepEqual(
        kidsOf(store).filter((k) => k === next || k === current),
        [current, next],
      );
      assert.equal(store.signingKey().kid, current);
      assert.equal((await rows()).find((r) => r.kid === next)?.status, 'next');
      issued.push(sign(store, clock.t));
      await checkAll(store, issued, clock.t);

      // Just before activation nothing moves; the last token of the old key is signed now.
      clock.t = rotatedAt + delay - 1;
      assert.equal(await advanceKeys(storage.db, config, clock.t), false);
      await store.reload();
      assert.equal(store.signingKey().kid, current);
      const lastOfOld = sign(store, clock.t);
      issued.push(lastOfOld);
      await checkAll(store, issued, clock.t);

      // Activation: the next key signs, the old one is retiring and still published.
      clock.t += 1;
      const activatedAt = clock.t;
      assert.equal(await advanceKeys(storage.db, config, clock.t), true);
      await store.reload();
      assert.equal(store.signingKey().kid, next);
      const old = (await rows()).find((r) => r.kid === current)!;
      assert.equal(old.status, 'retiring');
      assert.equal(Number(old.retire_at), activatedAt + lifetime);
      assert.ok(kidsOf(store).includes(current));
      const firstOfNew = sign(store, clock.t);
      assert.equal(firstOfNew.kid, next);
      issued.push(firstOfNew);
      await checkAll(store, issued, clock.t);

      // The old key stays published until retire_at, so its last token verifies to its end.
      clock.t = lastOfOld.exp - 1000;
      assert.equal(await advanceKeys(storage.db, config, clock.t), false);
      await store.reload();
      assert.ok(kidsOf(store).includes(current));
      await checkAll(store, issued, clock.t);
      clock.t = Number(old.retire_at) - 1;
      assert.equal(await advanceKeys(storage.db, config, clock.t), false);
      await store.reload();
      assert.ok(kidsOf(store).includes(current));
      await checkAll(store, issued, clock.t);

      // At retire_at it disappears: no token it signed is alive any more.
      clock.t = Number(old.retire_at);
      assert.ok(issued.filter((i) => i.kid === current).every((i) => i.exp <= clock.t));
      assert.equal(await advanceKeys(storage.db, config, clock.t), true);
      await store.reload();
      assert.equal(kidsOf(store).includes(current), false);
      assert.equal(store.get(current), undefined);
      assert.equal((await rows()).find((r) => r.kid === current)?.status, 'retired');
      await assert.rejects(verifyAt(jwksOf(store), lastOfOld.token, lastOfOld.exp - 1000), {
        code: 'ERR_JWKS_NO_MATCHING_KEY',
      });
      await checkAll(store, issued, clock.t);
      issued.push(sign(store, clock.t));
      await checkAll(store, issued, clock.t);
      clock.t += DAY;
    }
    // Exactly one key signs; retired keys are never loaded.
    const final = await rows();
    assert.equal(final.filter((r) => r.status === 'active').length, 1);
    assert.equal(final.filter((r) => r.status === 'retired').length, 2);
    assert.equal(jwksOf(store).keys.length, 1);
  });

  test('two key stores on one database agree on the signing key', async () => {
    const clock = fakeClock();
    const master = newMaster();
    const otherDb = await storage.reopen();
    const thirdDb = await storage.reopen();
    const stores = () =>
      [storage.db, otherDb, thirdDb].map((db) => new KeyStore(db, encryptionKey(master), clock.now));
    // Instances starting at once on an empty database create one key between them.
    for (let round = 0; round < 5; round++) {
      await storage.db.kysely.deleteFrom('signing_keys').execute();
      const racing = stores();
      await Promise.all(racing.map((s) => s.init()));
      const kids = racing.map((s) => s.signingKey().kid);
      assert.equal(new Set(kids).size, 1, `round ${round}: the instances sign with different keys`);
      assert.equal((await rows()).filter((r) => r.status === 'active').length, 1);
      for (const s of racing) assert.deepEqual(kidsOf(s), kidsOf(racing[0]!));
    }
    const [a, b] = stores() as [KeyStore, KeyStore];
    await Promise.all([a.init(), b.init()]);
    assert.equal(a.signingKey().kid, b.signingKey().kid);

    // A rotation started by one, moved along by the other.
    clock.t += 1000;
    const next = await rotateKeys(a, config, 0, clock.t);
    await b.reload();
    assert.equal(a.signingKey().kid, next);
    assert.equal(b.signingKey().kid, next);
    clock.t += 1000;
    const later = await rotateKeys(b, config, 3600, clock.t);
    clock.t += 3600_000;
    // Both instances' housekeeping moves keys along at once. Each step is a conditional update:
    // PostgreSQL runs both; SQLite may refuse the second writer of overlapping transactions
    // (SQLITE_BUSY), which leaves nothing half done and is retried at the next housekeeping.
    const advanced = await Promise.allSettled([
      advanceKeys(storage.db, config, clock.t),
      advanceKeys(otherDb, config, clock.t),
    ]);
    const fulfilled = advanced.filter((r) => r.status === 'fulfilled');
    assert.ok(fulfilled.length >= 1);
    if (dialect === 'postgres') assert.equal(fulfilled.length, 2);
    for (const r of advanced) if (r.status === 'rejected') assert.equal(r.reason?.code, 'SQLITE_BUSY');
    assert.equal(await advanceKeys(otherDb, config, clock.t), false);
    await Promise.all([a.reload(), b.reload()]);
    assert.equal(a.signingKey().kid, later);
    assert.equal(b.signingKey().kid, later);
    assert.deepEqual(jwksOf(a), jwksOf(b));
    assert.equal((await rows()).filter((r) => r.status === 'active').length, 1);
    // A token one signs, the other's JWKS verifies.
    const token = sign(b, clock.t);
    await verifyAt(jwksOf(a), token.token, clock.t);
  });
});

eachDialect('a server on an existing database', (dialect) => {
  test('reuses its keys; another master key cannot start on it', async () => {
    const first = await startServer(dialect);
    try {
      const second = await startServer(dialect, { storage: first.storage, masterKey: first.masterKey });
      try {
        const [jwksA, jwksB] = await Promise.all([
          first.request('GET', '/.well-known/jwks.json'),
          second.request('GET', '/.well-known/jwks.json'),
        ]);
        assert.deepEqual(jwksB.body, jwksA.body);
        assert.equal(second.ctx.keys.signingKey().kid, first.ctx.keys.signingKey().kid);
        const count = await first.storage.db.kysely
          .selectFrom('signing_keys')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 1);
        // A token the second one issues verifies against the first one's JWKS.
        const bundle = await second.signIn('keys@example.com');
        const { protectedHeader } = await jwtVerify(
          bundle.access_token,
          createRemoteJWKSet(new URL(`${first.url}/.well-known/jwks.json`)),
          { issuer: second.url, algorithms: ['ES256'] },
        );
        assert.equal(protectedHeader.kid, decodeProtectedHeader(bundle.access_token).kid);
      } finally {
        await second.close();
      }
      await assert.rejects(
        startServer(dialect, { storage: first.storage, masterKey: randomBytes(32).toString('base64') }),
      );
    } finally {
      await first.close();
    }
  });
});
