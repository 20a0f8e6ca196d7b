/**
 * Where the SDK keeps the token bundle and the trusted-device id: three async methods over string
 * values. Bring your own for React Native (Keychain / Keystore), an Electron safe store, etc.
 * Values are opaque strings; an adapter must store them as they are and may encrypt them.
 *
 * @example
 * ```ts
 * import * as SecureStore from 'expo-secure-store';
 * import type { TokenStorage } from '@tessera/client';
 *
 * // Keychain on iOS, Keystore-backed encrypted storage on Android.
 * const secureStorage: TokenStorage = {
 *   get: (key) => SecureStore.getItemAsync(key),
 *   set: (key, value) => SecureStore.setItemAsync(key, value),
 *   remove: (key) => SecureStore.deleteItemAsync(key),
 * };
 * ```
 */
export interface TokenStorage {
  /** The stored value, or null when there is none. */
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  remove(key: string): Promise<void>;
}

/**
 * Keeps values in memory only: nothing survives a reload, nothing touches a disk. The default
 * outside browsers. Share one instance between clients to share their session.
 *
 * @example
 * ```ts
 * import { createTesseraClient, memoryStorage } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer, apiKeyId, storage: memoryStorage() });
 * ```
 */
export function memoryStorage(): TokenStorage {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key) ?? null,
    set: async (key, value) => {
      values.set(key, value);
    },
    remove: async (key) => {
      values.delete(key);
    },
  };
}
