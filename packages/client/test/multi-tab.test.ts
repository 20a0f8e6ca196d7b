import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, it } from 'node:test';
import {
  type AuthEvent,
  browserStorage,
  memoryKeyStore,
  memoryStorage,
  processLock,
  type TesseraClient,
} from '@tessera/client';
import { fakeIndexedDb } from './helpers/fake-indexeddb.js';
import { TabbedLocalStorage } from './helpers/fake-local-storage.js';
import { manualClock, nextEvent, type Setup, setup } from './helpers/setup.js';

const HOUR = 3600;

/** Two "tabs": two clients sharing one storage and one BroadcastChannel name. */
async function twoTabs(s: Setup) {
  const name = `tessera-test-${randomUUID()}`;
  const channels = [new BroadcastChannel(name), new BroadcastChannel(name)] as const;
  const storage = memoryStorage();
  const tabs = channels.map((channel) => s.client({ storage, channel })) as [TesseraClient, TesseraClient];
  return {
    tabs,
    storage,
    close() {
      for (const tab of tabs) tab.close();
      for (const channel of channels) channel.close();
    },
  };
}

describe('several tabs', () => {
  let s: Setup | undefined;
  let close: (() => void) | undefined;
  afterEach(async () => {
    close?.();
    await s?.close();
    s = undefined;
  });

  it('renewing at once: one refresh, the same valid tokens in both, no reuse detected', async () => {
    const clock = manualClock();
    // No grace window: a second use of the refresh token would revoke the session.
    s = await setup({ now: clock.now, env: { TESSERA_REFRESH_GRACE: '0' } });
    const t = await twoTabs(s);
    close = t.close;
    const [a, b] = t.tabs;
    const bSignedIn = nextEvent<AuthEvent>(b.onAuthStateChange);
    await s.signIn(a, 'tabs@example.com');
    assert.equal((await bSignedIn).type, 'signedIn');
    assert.equal(await b.getAccessToken(), await a.getAccessToken());

    clock.advance(HOUR - 20);
    const [tokenA, tokenB] = await Promise.all([a.getAccessToken(), b.getAccessToken()]);
    assert.equal(s.count('/oauth/token'), 1);
    assert.ok(tokenA);
    assert.equal(tokenA, tokenB);
    assert.equal(await a.getIdToken(), await b.getIdToken());
    assert.equal((await a.verify()).success, true);
    assert.equal((await b.verify()).success, true);

    // The session is alive: the next renewal, by either tab, succeeds.
    clock.advance(HOUR - 20);
    const [again] = await Promise.all([b.getAccessToken(), a.getAccessToken()]);
    assert.equal(s.count('/oauth/token'), 2);
    assert.ok(again && again !== tokenA);
    assert.equal((await b.verify()).success, true);
  });

  it('a tab that missed the notice re-reads storage under the lock and does not refresh again', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now, env: { TESSERA_REFRESH_GRACE: '0' } });
    const storage = memoryStorage();
    const name = `tessera-test-${randomUUID()}`;
    const ca = new BroadcastChannel(name);
    const a = s.client({ storage, channel: ca });
    const b = s.client({ storage, channel: null }); // deaf to notices; shares only storage
    close = () => ca.close();
    await s.signIn(a, 'deaf@example.com');
    assert.ok(await b.getAccessToken());
    clock.advance(HOUR - 20);
    const renewedByA = await a.getAccessToken();
    const seenByB = await b.getAccessToken();
    assert.equal(seenByB, renewedByA);
    assert.equal(s.count('/oauth/token'), 1);
  });

  it("a tab whose copy of localStorage has not caught up with another tab's renewal does not refresh again", async () => {
    // Chromium: each tab reads its own copy of localStorage, updated a moment after another tab
    // wrote; the lock (Web Locks, browser-wide) can be granted before the news arrives.
    const clock = manualClock();
    s = await setup({ now: clock.now, env: { TESSERA_REFRESH_GRACE: '0' } });
    const local = new TabbedLocalStorage();
    const copies = [local.tab(), local.tab()] as const;
    const keyStore = memoryKeyStore(); // the origin's IndexedDB: one AES key for both tabs
    const stamps = fakeIndexedDb(); // the origin's IndexedDB, read coherently by every tab
    const lock = processLock(); // stands for Web Locks: one lock for both tabs
    const [a, b] = copies.map((copy) =>
      s!.client({ storage: browserStorage({ localStorage: copy, keyStore, stamps }), keyStore, lock }),
    ) as [TesseraClient, TesseraClient];
    await s.signIn(a, 'stale-copy@example.com');
    copies[1].catchUp();
    assert.equal(await b.getAccessToken(), await a.getAccessToken(), "b reads a's sign-in");
    const signedOut: string[] = [];
    b.onAuthStateChange(({ type }) => {
      if (type === 'signedOut') signedOut.push(type);
    });

    clock.advance(HOUR - 20);
    const renewedByA = await a.getAccessToken();
    const stale = copies[1].staleReads;
    const seenByB = await b.getAccessToken();
    assert.ok(copies[1].staleReads > stale, "b's copy was stale when b looked under the lock");
    assert.equal(s.count('/oauth/token'), 1, 'one refresh');
    assert.equal(seenByB, renewedByA);
    assert.deepEqual(signedOut, []);
    assert.equal((await b.verify()).success, true);
  });

  it('other tabs hear of the renewal and of the sign-out', async () => {
    const clock = manualClock();
    s = await setup({ now: clock.now });
    const t = await twoTabs(s);
    close = t.close;
    const [a, b] = t.tabs;
    await s.signIn(a, 'listen@example.com');
    await b.getAccessToken();

    const refreshed = nextEvent<AuthEvent>(b.onAuthStateChange);
    clock.advance(HOUR - 20);
    const renewed = await a.getAccessToken();
    const event = await refreshed;
    assert.equal(event.type, 'refreshed');
    assert.equal(event.claims?.identifier, 'listen@example.com');
    assert.equal(await b.getAccessToken(), renewed);

    const signedOut = nextEvent<AuthEvent>(b.onAuthStateChange);
    await a.logout();
    assert.equal((await signedOut).type, 'signedOut');
    assert.equal(await b.isSignedIn(), false);
    assert.equal(await b.getAccessToken(), null);
  });
});
