import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { browserStorage, indexedDbKeyStore, memoryKeyStore } from '@tessera/client';
import { fakeIndexedDb } from './helpers/fake-indexeddb.js';
import { FakeLocalStorage, TabbedLocalStorage } from './helpers/fake-local-storage.js';
import { type Setup, setup } from './helpers/setup.js';

describe('browserStorage (encrypted localStorage)', () => {
  it('stores ciphertext only and reads it back', async () => {
    const local = new FakeLocalStorage();
    const storage = browserStorage({ localStorage: local, keyStore: memoryKeyStore() });
    await storage.set('tessera.pk.session', 'eyJhbGciOi.secret-token-text');
    const raw = local.getItem('tessera.pk.session') ?? '';
    assert.ok(raw.startsWith('tessera-enc:v1:'));
    assert.ok(!raw.includes('secret-token-text'));
    assert.ok(!raw.includes('eyJhbGciOi'));
    assert.equal(await storage.get('tessera.pk.session'), 'eyJhbGciOi.secret-token-text');
    await storage.remove('tessera.pk.session');
    assert.equal(local.getItem('tessera.pk.session'), null);
    assert.equal(await storage.get('tessera.pk.session'), null);
  });

  it('keeps its AES key non-extractable in the key store, created once', async () => {
    const keys = memoryKeyStore();
    const a = browserStorage({ localStorage: new FakeLocalStorage(), keyStore: keys });
    const b = browserStorage({ localStorage: new FakeLocalStorage(), keyStore: keys });
    await Promise.all([a.set('x', '1'), b.set('y', '2')]);
    const key = await keys.get('tessera.storage-key');
    assert.ok(key && 'algorithm' in key);
    assert.equal(key.extractable, false);
    assert.equal(key.algorithm.name, 'AES-GCM');
  });

  it('a copy of localStorage alone reveals nothing: without the key the values read as absent', async () => {
    const local = new FakeLocalStorage();
    await browserStorage({ localStorage: local, keyStore: memoryKeyStore() }).set('k', 'token');
    const copy = new FakeLocalStorage();
    for (const [k, v] of local.items) copy.setItem(k, v);
    const elsewhere = browserStorage({ localStorage: copy, keyStore: memoryKeyStore() });
    assert.equal(await elsewhere.get('k'), null);
    assert.equal(copy.getItem('k'), null, 'the undecryptable value is dropped');
  });

  it("reads another tab's write and removal even before this tab's copy of localStorage has them", async () => {
    const local = new TabbedLocalStorage();
    const [copyA, copyB] = [local.tab(), local.tab()];
    const keyStore = memoryKeyStore();
    const stamps = fakeIndexedDb();
    const a = browserStorage({ localStorage: copyA, keyStore, stamps });
    const b = browserStorage({ localStorage: copyB, keyStore, stamps });
    await a.set('k', 'first');
    assert.equal(await b.get('k'), 'first');
    await a.set('k', 'second');
    assert.equal(await b.get('k'), 'second');
    await a.remove('k');
    assert.equal(await b.get('k'), null);
    assert.equal(copyB.staleReads, 3, "each time b's copy was behind at first");
    // Without stamps the stale copy is what b gets.
    const blind = browserStorage({ localStorage: copyB, keyStore, stamps: null });
    await a.set('k', 'third');
    assert.equal(await blind.get('k'), null);
  });

  it('refuses tampered values and values moved to another entry', async () => {
    const local = new FakeLocalStorage();
    const storage = browserStorage({ localStorage: local, keyStore: memoryKeyStore() });
    await storage.set('a', 'value-a');
    await storage.set('b', 'value-b');
    local.setItem('b', local.getItem('a')!);
    assert.equal(await storage.get('b'), null, 'bound to its entry name');
    await storage.set('c', 'value-c');
    const raw = local.getItem('c')!;
    const flipped = raw.at(-2) === 'A' ? 'B' : 'A';
    local.setItem('c', `${raw.slice(0, -2)}${flipped}${raw.slice(-1)}`);
    assert.equal(await storage.get('c'), null);
    local.setItem('d', 'plain text from somewhere else');
    assert.equal(await storage.get('d'), null);
  });
});

describe('a client over browserStorage', () => {
  let s: Setup;
  before(async () => {
    s = await setup();
  });
  after(() => s.close());

  it('keeps no token text in localStorage, and a reload (new client, same storage) stays signed in', async () => {
    const local = new FakeLocalStorage();
    const keyStore = memoryKeyStore();
    const client = s.client({ storage: browserStorage({ localStorage: local, keyStore }), keyStore });
    await s.signIn(client, 'browser@example.com');
    await client.devices.register('browser');
    const accessToken = (await client.getAccessToken())!;
    const idToken = (await client.getIdToken())!;
    const dump = local.dump();
    assert.ok(local.items.size >= 2, 'the session and the device id are stored');
    for (const secret of [accessToken, idToken, ...accessToken.split('.'), ...idToken.split('.')])
      assert.ok(!dump.includes(secret), 'a part of a token is in localStorage');
    assert.ok(!dump.includes('tsr_'), 'the refresh token is in localStorage');
    assert.ok(!dump.includes('browser@example.com'));

    const reloaded = s.client({ storage: browserStorage({ localStorage: local, keyStore }), keyStore });
    assert.equal(await reloaded.isSignedIn(), true);
    assert.equal(await reloaded.getAccessToken(), accessToken);
    assert.equal(await reloaded.devices.currentId(), await client.devices.currentId());

    const copied = new FakeLocalStorage();
    for (const [k, v] of local.items) copied.setItem(k, v);
    const thief = s.client({ storage: browserStorage({ localStorage: copied, keyStore: memoryKeyStore() }) });
    assert.equal(await thief.isSignedIn(), false);
    assert.equal(await thief.getAccessToken(), null);
  });
});

describe('indexedDbKeyStore (over a fake IndexedDB)', () => {
  it('stores keys by reference, first writer wins on add, set replaces, remove deletes', async () => {
    const factory = fakeIndexedDb();
    const keys = indexedDbKeyStore({ indexedDB: factory });
    const aes = () => crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    const [first, second] = [await aes(), await aes()];
    assert.equal(await keys.get('k'), undefined);
    assert.equal(await keys.add('k', first), first);
    assert.equal(await keys.add('k', second), first, 'the first key stays');
    assert.equal(await keys.get('k'), first);
    await keys.set('k', second);
    assert.equal(await keys.get('k'), second);
    await keys.remove('k');
    assert.equal(await keys.get('k'), undefined);
    assert.equal(factory.opened, 1, 'the database is opened once');
  });

  it('two tabs adding at once both end with the first key', async () => {
    const factory = fakeIndexedDb();
    const [a, b] = [indexedDbKeyStore({ indexedDB: factory }), indexedDbKeyStore({ indexedDB: factory })];
    const aes = () => crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    const [ka, kb] = [await aes(), await aes()];
    const [ra, rb] = await Promise.all([a.add('k', ka), b.add('k', kb)]);
    assert.equal(ra, rb);
    assert.equal(await a.get('k'), ra);
  });

  it('backs browserStorage: two storages over one database share the key', async () => {
    const factory = fakeIndexedDb();
    const local = new FakeLocalStorage();
    const tabA = browserStorage({ localStorage: local, keyStore: indexedDbKeyStore({ indexedDB: factory }) });
    const tabB = browserStorage({ localStorage: local, keyStore: indexedDbKeyStore({ indexedDB: factory }) });
    await Promise.all([tabA.set('a', 'from A'), tabB.set('b', 'from B')]);
    assert.equal(await tabB.get('a'), 'from A');
    assert.equal(await tabA.get('b'), 'from B');
  });

  it('fails clearly where there is no IndexedDB', async () => {
    await assert.rejects(indexedDbKeyStore().get('k'), /IndexedDB is not available/);
  });
});
