import { decodeBase64url, encodeBase64url, utf8 } from '../encoding/base64url.js';
import { indexedDbKeyStore } from './indexeddb-key-store.js';
import type { KeyStore } from './key-store.js';
import type { TokenStorage } from './token-storage.js';

/**
 * The parts of `localStorage` the adapter uses (`sessionStorage` fits too).
 *
 * @example
 * ```ts
 * import { browserStorage, type LocalStorageLike } from '@tessera/client';
 *
 * const perTab: LocalStorageLike = sessionStorage;
 * const storage = browserStorage({ localStorage: perTab });
 * ```
 */
export type LocalStorageLike = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

/**
 * Options of {@link browserStorage}; all optional.
 *
 * @example
 * ```ts
 * const options: BrowserStorageOptions = { keyId: 'my-app.storage-key' };
 * ```
 */
export interface BrowserStorageOptions {
  /** Default the global `localStorage`. */
  localStorage?: LocalStorageLike;
  /** Where the AES key lives. Default {@link indexedDbKeyStore}. */
  keyStore?: KeyStore;
  /** Id of the AES key in the key store. Default `tessera.storage-key`. */
  keyId?: string;
  /**
   * The IndexedDB where every write leaves a stamp, so that a tab reads what another tab has just
   * written (see {@link browserStorage}). Default the global `indexedDB` when `localStorage` is the
   * global one; none when you pass a storage of your own (`sessionStorage` is not shared between
   * tabs). `null` for none.
   */
  stamps?: IDBFactory | null;
}

const PREFIX = 'tessera-enc:v1:';

/**
 * `localStorage`, with every value encrypted (AES-GCM, 256-bit) under a NON-EXTRACTABLE key kept
 * in IndexedDB. The key cannot be read out by any script and is not in localStorage, so a copy
 * of localStorage reveals no token, and no token is written to the browser's files in clear.
 * (Browsers do serialise the key into their IndexedDB files: a copy of the whole profile could
 * yield it.) Each value is bound to its entry name (additional data), so values cannot be
 * swapped between entries.
 *
 * What it does NOT stop: script running on your origin (XSS, a compromised dependency) can call
 * the SDK, or WebCrypto with the same key, and use the tokens. Keep your origin free of injected
 * script (CSP, dependency hygiene); no storage choice fixes that.
 *
 * A value that cannot be decrypted (the key was cleared with site data) reads as absent.
 *
 * Tabs and localStorage: browsers with a process per tab (Chromium) give each tab a copy of
 * localStorage that learns of another tab's write a moment later, and nothing orders that news
 * with the renewal lock. A tab that takes the lock right after another tab renewed could read
 * the spent refresh token and renew a second time. So every write also leaves a stamp (the
 * value's random IV, nothing secret) in IndexedDB, which every tab reads coherently; a read
 * whose localStorage copy does not match the stamp yet waits for it to catch up (up to a
 * second, then takes what is there).
 *
 * @example
 * ```ts
 * import { browserStorage, createTesseraClient } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer, apiKeyId, storage: browserStorage() });
 * ```
 */
export function browserStorage(options: BrowserStorageOptions = {}): TokenStorage {
  const local = () => {
    const store = options.localStorage ?? globalThis.localStorage;
    if (!store) throw new Error('localStorage is not available here; pass another storage');
    return store;
  };
  const keyStore = options.keyStore ?? indexedDbKeyStore();
  const keyId = options.keyId ?? 'tessera.storage-key';
  const stamps = stampStore(
    options.stamps !== undefined
      ? options.stamps
      : options.localStorage === undefined || options.localStorage === globalThis.localStorage
        ? globalThis.indexedDB
        : null,
  );
  let key: Promise<CryptoKey> | undefined;
  const aesKey = () => {
    key ??= loadOrCreateKey(keyStore, keyId);
    key.catch(() => {
      key = undefined;
    });
    return key;
  };

  return {
    async get(name) {
      const stored = await coherentRead(local, stamps, name);
      if (stored === null) return null;
      const plain = stored.startsWith(PREFIX) ? await decrypt(await aesKey(), name, stored) : null;
      if (plain === null) local().removeItem(name);
      return plain;
    },
    async set(name, value) {
      const sealed = await encrypt(await aesKey(), name, value);
      local().setItem(name, sealed);
      await stamps?.put(name, stampOf(sealed));
    },
    async remove(name) {
      local().removeItem(name);
      await stamps?.put(name, stampOf(null));
    },
  };
}

/** How long a read waits for this tab's copy of localStorage to catch up with the stamp. */
const CATCH_UP_MS = 1000;
const CATCH_UP_POLL_MS = 10;

/** What a write leaves in the stamp store: the value's IV (random per write), '' for none. */
function stampOf(stored: string | null): string {
  if (stored === null) return '';
  return stored.startsWith(PREFIX) ? (stored.slice(PREFIX.length).split('.')[0] ?? '') : stored.slice(0, 64);
}

/**
 * The entry as the last write left it, whichever tab wrote it: localStorage re-read until it
 * matches the stamp in IndexedDB. Without a stamp (none written yet, no IndexedDB) or after
 * {@link CATCH_UP_MS}, localStorage as it is.
 */
async function coherentRead(
  local: () => LocalStorageLike,
  stamps: StampStore | undefined,
  name: string,
): Promise<string | null> {
  if (!stamps) return local().getItem(name);
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    const expected = await stamps.get(name);
    // Read after the stamp, so that a write landing meanwhile is seen (its stamp on the next round).
    const stored = local().getItem(name);
    if (expected === undefined || expected === stampOf(stored) || Date.now() >= deadline) return stored;
    await new Promise((resolve) => setTimeout(resolve, CATCH_UP_POLL_MS));
  }
}

interface StampStore {
  /** The stamp, or undefined when there is none or it cannot be read. */
  get(name: string): Promise<string | undefined>;
  put(name: string, stamp: string): Promise<void>;
}

const STAMP_DATABASE = 'tessera-stamps';
const STAMP_STORE = 'stamps';

/**
 * Stamps in IndexedDB. Best effort: when IndexedDB fails, reads fall back to localStorage alone
 * (as without stamps) rather than failing sign-in or renewal.
 */
function stampStore(factory: IDBFactory | null | undefined): StampStore | undefined {
  if (!factory) return undefined;
  let opened: Promise<IDBDatabase> | undefined;
  const database = () => {
    opened ??= new Promise<IDBDatabase>((resolve, reject) => {
      const request = factory.open(STAMP_DATABASE, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STAMP_STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    opened.catch(() => {
      opened = undefined;
    });
    return opened;
  };
  // Settles once the transaction has completed: a write is committed before the renewal lock is
  // released, so the next holder's read sees it.
  const run = async <T>(mode: IDBTransactionMode, op: (store: IDBObjectStore) => IDBRequest<T>) => {
    const transaction = (await database()).transaction(STAMP_STORE, mode);
    const request = op(transaction.objectStore(STAMP_STORE));
    return new Promise<T>((resolve, reject) => {
      transaction.oncomplete = () => resolve(request.result);
      transaction.onabort = () => reject(transaction.error ?? request.error);
    });
  };
  return {
    async get(name) {
      try {
        const stamp = await run('readonly', (store) => store.get(name));
        return typeof stamp === 'string' ? stamp : undefined;
      } catch {
        return undefined;
      }
    },
    async put(name, stamp) {
      try {
        await run('readwrite', (store) => store.put(stamp, name));
      } catch {}
    },
  };
}

async function loadOrCreateKey(keyStore: KeyStore, keyId: string): Promise<CryptoKey> {
  const existing = await keyStore.get(keyId);
  if (existing && 'algorithm' in existing) return existing;
  const created = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, [
    'encrypt',
    'decrypt',
  ]);
  // Another tab may have created one at the same moment: everybody uses the first one stored.
  const stored = await keyStore.add(keyId, created);
  if (!('algorithm' in stored)) throw new Error(`key store entry ${keyId} is not an AES key`);
  return stored;
}

async function encrypt(key: CryptoKey, name: string, value: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: utf8(name) },
    key,
    utf8(value),
  );
  return `${PREFIX}${encodeBase64url(iv)}.${encodeBase64url(sealed)}`;
}

async function decrypt(key: CryptoKey, name: string, stored: string): Promise<string | null> {
  const [iv, sealed] = stored.slice(PREFIX.length).split('.');
  if (!iv || !sealed) return null;
  try {
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: decodeBase64url(iv), additionalData: utf8(name) },
      key,
      decodeBase64url(sealed),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}
