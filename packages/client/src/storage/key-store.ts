/**
 * What a {@link KeyStore} holds: WebCrypto keys, kept as objects (never exported).
 *
 * @example
 * ```ts
 * const isKeyPair = (key: StoredKey): key is CryptoKeyPair => 'privateKey' in key;
 * ```
 */
export type StoredKey = CryptoKey | CryptoKeyPair;

/**
 * Persists non-extractable WebCrypto keys. Browsers keep `CryptoKey` objects in IndexedDB by
 * structured clone, so a key can be used again after a reload without ever being exportable.
 *
 * @example
 * ```ts
 * import { indexedDbKeyStore, memoryKeyStore } from '@tessera/client';
 *
 * const keys = typeof indexedDB === 'undefined' ? memoryKeyStore() : indexedDbKeyStore();
 * ```
 */
export interface KeyStore {
  get(id: string): Promise<StoredKey | undefined>;
  /** Stores `value` unless `id` is taken; returns what is stored afterwards (the first writer wins). */
  add(id: string, value: StoredKey): Promise<StoredKey>;
  /** Stores `value`, replacing what was there. */
  set(id: string, value: StoredKey): Promise<void>;
  remove(id: string): Promise<void>;
}

/**
 * A key store in memory: keys last as long as the page or process. The default where IndexedDB
 * is missing (Node, React Native without a polyfill).
 *
 * @example
 * ```ts
 * import { createTesseraClient, memoryKeyStore } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer, apiKeyId, keyStore: memoryKeyStore() });
 * ```
 */
export function memoryKeyStore(): KeyStore {
  const keys = new Map<string, StoredKey>();
  return {
    get: async (id) => keys.get(id),
    add: async (id, value) => {
      const existing = keys.get(id);
      if (existing) return existing;
      keys.set(id, value);
      return value;
    },
    set: async (id, value) => {
      keys.set(id, value);
    },
    remove: async (id) => {
      keys.delete(id);
    },
  };
}
