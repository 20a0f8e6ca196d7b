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
      const stored = local().getItem(name);
      if (stored === null) return null;
      const plain = stored.startsWith(PREFIX) ? await decrypt(await aesKey(), name, stored) : null;
      if (plain === null) local().removeItem(name);
      return plain;
    },
    async set(name, value) {
      local().setItem(name, await encrypt(await aesKey(), name, value));
    },
    async remove(name) {
      local().removeItem(name);
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
