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
import {
  advanceKeys,
  HOUSEKEEPING_INTERVAL_MS,
  KEY_SWITCH_ALLOWANCE_MS,
  rotateKeys,
  tokenLifetimeMs,
} from '../../src/keys/rotation.js';
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
    const lifetime = tokenLifetimeMs(config);
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

      // At activate_at the store signs with the next key by itself, before any promotion or reload.
      clock.t += 1;
      const activatedAt = clock.t;
      assert.equal(store.signingKey().kid, next);
      assert.equal((await rows()).find((r) => r.kid === next)?.status, 'next');
      // Promotion: the old key is retiring and still published, for the instances that switch
      // only at their next reload and then for a token lifetime.
      assert.equal(await advanceKeys(storage.db, config, clock.t), true);
      await store.reload();
      assert.equal(store.signingKey().kid, next);
      const old = (await rows()).find((r) => r.kid === current)!;
      assert.equal(old.status, 'retiring');
      assert.equal(Number(old.retire_at), activatedAt + KEY_SWITCH_ALLOWANCE_MS + lifetime);
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

  test('two databases under one master key get different first key ids (and a database with its row lost makes one)', async () => {
    const master = newMaster();
    const other = await createStorage(dialect);
    try {
      const a = new KeyStore(storage.db, encryptionKey(master));
      const b = new KeyStore(other.db, encryptionKey(master));
      await Promise.all([a.init(), b.init()]);
      // They were equal, with different key material: a verifier caching one refused the other's tokens.
      assert.notEqual(a.signingKey().kid, b.signingKey().kid);
      assert.notDeepEqual(jwksOf(a), jwksOf(b));

      await other.db.kysely.deleteFrom('database_identity').execute();
      await other.db.kysely.deleteFrom('signing_keys').execute();
      const racing = [other.db, await other.reopen()].map((db) => new KeyStore(db, encryptionKey(master)));
      await Promise.all(racing.map((s) => s.init()));
      assert.equal(racing[0]!.signingKey().kid, racing[1]!.signingKey().kid);
      assert.notEqual(racing[0]!.signingKey().kid, a.signingKey().kid);
    } finally {
      await other.cleanup();
    }
  });

  test('several pending keys: the one due last signs, in every store and in the database alike', async () => {
    const clock = fakeClock();
    const store = new KeyStore(storage.db, encryptionKey(newMaster()), clock.now);
    await store.init();
    const status = async () => new Map((await rows()).map((r) => [r.kid, r.status]));
    const first = store.signingKey().kid;
    // A key published with a delay, then an emergency rotation: the latter signs at once …
    const delayed = await rotateKeys(store, config, 3600, clock.t);
    clock.t += 1000;
    const urgent = await rotateKeys(store, config, 0, clock.t);
    assert.equal(store.signingKey().kid, urgent);
    assert.deepEqual(
      await status(),
      new Map([
        [first, 'retiring'],
        [delayed, 'next'],
        [urgent, 'active'],
      ]),
    );
    // … and the delayed one still takes over when its time comes: first in the store by itself,
    // then in the database.
    clock.t += 3599_000;
    assert.equal(store.signingKey().kid, delayed);
    assert.equal(await advanceKeys(storage.db, config, clock.t), true);
    await store.reload();
    assert.equal(store.signingKey().kid, delayed);
    assert.equal((await status()).get(urgent), 'retiring');

    // Two instances rotating at once (automatic rotation): of the two keys due, the later one
    // signs; the other retires with the key they replace instead of taking over afterwards.
    clock.t += DAY;
    const one = await rotateKeys(store, config, 600, clock.t);
    const two = await rotateKeys(store, config, 600, clock.t + 1);
    clock.t += 599_999;
    assert.equal(store.signingKey().kid, delayed);
    clock.t += 1;
    assert.equal(store.signingKey().kid, one);
    clock.t += 1;
    assert.equal(store.signingKey().kid, two);
    assert.equal(await advanceKeys(storage.db, config, clock.t), true);
    await store.reload();
    assert.equal(store.signingKey().kid, two);
    const after = await status();
    assert.equal(after.get(one), 'retiring');
    assert.equal(after.get(delayed), 'retiring');
    const retiring = (await rows()).filter((r) => r.status === 'retiring');
    assert.deepEqual(retiring.map((r) => r.kid).sort(), [delayed, one].sort());
    for (const r of retiring)
      assert.equal(Number(r.retire_at), clock.t + KEY_SWITCH_ALLOWANCE_MS + tokenLifetimeMs(config));
    assert.equal(await advanceKeys(storage.db, config, clock.t + 60_000), false);
    await store.reload();
    assert.equal(store.signingKey().kid, two);
    assert.deepEqual(kidsOf(store).sort(), [delayed, one, two].sort());
  });

  // The tests above reload every key store at the same instant. Here two instances run their
  // housekeeping (advance keys, then reload) once a minute as app.ts does, 25 s apart, and the
  // rotation comes 5 s after the second one reloaded: it lags the rotation by 55 s.
  for (const delaySeconds of [0, 100]) {
    test(`instances reloading at different moments, rotation delay ${delaySeconds} s: every token verifies against every JWKS until it expires`, async () => {
      const STEP = 5_000;
      const clock = fakeClock();
      const start = clock.t;
      const master = newMaster();
      const instances = [
        { name: 'a', db: storage.db, offset: 0 },
        { name: 'b', db: await storage.reopen(), offset: 25_000 },
      ].map((i) => ({
        ...i,
        store: new KeyStore(i.db, encryptionKey(master), clock.now),
        jwks: '',
        /** Every kid this instance has published. */
        seen: new Set<string>(),
      }));
      for (const i of instances) await i.store.init();
      const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]];
      const old = a.store.signingKey().kid;
      assert.equal(b.store.signingKey().kid, old);

      const rotateAt = start + 10 * 60_000 + 30_000;
      const activateAt = rotateAt + delaySeconds * 1000;
      const signUntil = activateAt + 3 * HOUSEKEEPING_INTERVAL_MS;
      const end =
        activateAt +
        HOUSEKEEPING_INTERVAL_MS +
        KEY_SWITCH_ALLOWANCE_MS +
        tokenLifetimeMs(config) +
        3 * 60_000;
      const issued: Array<Issued & { by: string; at: number }> = [];
      let next = '';
      let checks = 0;
      for (let t = start; t <= end; t += STEP) {
        clock.t = t;
        for (const i of instances) {
          if (t - start >= i.offset && (t - start - i.offset) % HOUSEKEEPING_INTERVAL_MS === 0) {
            await advanceKeys(i.db, config, t);
            await i.store.reload();
          }
        }
        if (t === rotateAt) next = await rotateKeys(a.store, config, delaySeconds, t);
        const changed = new Set<string>();
        for (const i of instances) {
          if (i.store.jwksJson() !== i.jwks) {
            i.jwks = i.store.jwksJson();
            changed.add(i.name);
            for (const kid of kidsOf(i.store)) if (kid) i.seen.add(kid);
          }
        }
        if (t === activateAt && delaySeconds > 0) {
          // Both switch by their own clock: the database has not promoted the key yet, and neither
          // instance has reloaded since activate_at.
          assert.equal((await rows()).find((r) => r.kid === next)?.status, 'next');
          for (const i of instances) assert.equal(i.store.signingKey().kid, next, i.name);
        }
        if (t <= signUntil) {
          for (const i of instances) {
            const token = sign(i.store, t);
            if (delaySeconds * 1000 >= HOUSEKEEPING_INTERVAL_MS) {
              // A delay of at least a housekeeping interval: every instance publishes a key before
              // any instance signs with it.
              for (const other of instances)
                assert.ok(other.seen.has(token.kid), `${other.name} lacks ${token.kid}`);
            }
            issued.push({ ...token, by: i.name, at: t });
          }
        }
        // An instance's JWKS changes only when it reloads: checking every living token at its
        // first moment, its last one and after every change covers its whole life.
        for (const i of instances) {
          const jwks = JSON.parse(i.jwks) as JSONWebKeySet;
          for (const item of issued) {
            if (t >= item.exp || !i.seen.has(item.kid)) continue;
            if (item.at === t || changed.has(i.name) || t + STEP >= item.exp) {
              await verifyAt(jwks, item.token, t).catch((error: unknown) => {
                throw new Error(
                  `${i.name}'s JWKS refuses ${item.by}'s token of ${item.kid} signed at +${(item.at - start) / 1000} s, at +${(t - start) / 1000} s: ${error}`,
                );
              });
              checks++;
            }
          }
        }
      }
      // The old key signed after the rotation (b, until it reloaded, or until activate_at), the new
      // one took over everywhere, and the old key is gone from every JWKS now.
      const lastOld = issued.filter((i) => i.kid === old).at(-1)!;
      assert.ok(lastOld.at > rotateAt);
      if (delaySeconds === 0) assert.equal(lastOld.by, 'b');
      else assert.equal(lastOld.at, activateAt - STEP);
      assert.ok(issued.filter((i) => i.at === signUntil).every((i) => i.kid === next));
      assert.equal((await rows()).find((r) => r.kid === old)?.status, 'retired');
      for (const i of instances) assert.deepEqual(kidsOf(i.store), [next]);
      assert.ok(checks > issued.length * instances.length, `only ${checks} checks`);
    });
  }
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
