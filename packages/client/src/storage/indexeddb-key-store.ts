import type { KeyStore, StoredKey } from './key-store.js';

/**
 * Options of {@link indexedDbKeyStore}.
 *
 * @example
 * ```ts
 * const options: IndexedDbKeyStoreOptions = { database: 'my-app-keys' };
 * ```
 */
export interface IndexedDbKeyStoreOptions {
  /** Database name. Default `tessera-keys`. */
  database?: string;
  /** The `indexedDB` factory; default the global one (inject a fake in tests). */
  indexedDB?: IDBFactory;
}

const STORE = 'keys';

function promised<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/**
 * A {@link KeyStore} over IndexedDB: `CryptoKey` objects are stored by structured clone, so
 * non-extractable keys survive reloads and stay non-extractable. Same-origin only, like
 * IndexedDB itself.
 *
 * @example
 * ```ts
 * import { browserStorage, indexedDbKeyStore } from '@tessera/client';
 *
 * const storage = browserStorage({ keyStore: indexedDbKeyStore({ database: 'my-app-keys' }) });
 * ```
 */
export function indexedDbKeyStore(options: IndexedDbKeyStoreOptions = {}): KeyStore {
  const name = options.database ?? 'tessera-keys';
  let opened: Promise<IDBDatabase> | undefined;
  const database = () => {
    opened ??= new Promise<IDBDatabase>((resolve, reject) => {
      const factory = options.indexedDB ?? globalThis.indexedDB;
      if (!factory) {
        reject(new Error('IndexedDB is not available here; pass another keyStore'));
        return;
      }
      const request = factory.open(name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    opened.catch(() => {
      opened = undefined;
    });
    return opened;
  };
  const store = async (mode: IDBTransactionMode) =>
    (await database()).transaction(STORE, mode).objectStore(STORE);

  return {
    get: async (id) => (await promised((await store('readonly')).get(id))) as StoredKey | undefined,
    add: async (id, value) => {
      // One readwrite transaction: two tabs adding at once are serialised, the first one wins.
      const keys = await store('readwrite');
      const existing = (await promised(keys.get(id))) as StoredKey | undefined;
      if (existing) return existing;
      try {
        await promised(keys.add(value, id));
        return value;
      } catch (error) {
        // Someone else's add won after all (ConstraintError): theirs is the one to use.
        const winner = (await promised((await store('readonly')).get(id))) as StoredKey | undefined;
        if (winner) return winner;
        throw error;
      }
    },
    set: async (id, value) => {
      await promised((await store('readwrite')).put(value, id));
    },
    remove: async (id) => {
      await promised((await store('readwrite')).delete(id));
    },
  };
}
