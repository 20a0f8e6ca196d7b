import { broadcastChannelLock } from './lock/broadcast-lock.js';
import { processLock, type TokenLock } from './lock/lock.js';
import { webLocks } from './lock/web-locks.js';
import type { ChannelLike } from './session/channel.js';
import { browserStorage } from './storage/browser-storage.js';
import { indexedDbKeyStore } from './storage/indexeddb-key-store.js';
import { type KeyStore, memoryKeyStore } from './storage/key-store.js';
import { memoryStorage, type TokenStorage } from './storage/token-storage.js';

// Platform detection, in one place. Browsers get persistent encrypted storage and cross-tab
// coordination; Node and React Native get memory and a lock within the process.

const isBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined';
const hasIndexedDb = () => typeof indexedDB !== 'undefined';

export function defaultKeyStore(): KeyStore {
  return hasIndexedDb() ? indexedDbKeyStore() : memoryKeyStore();
}

export function defaultStorage(keyStore: KeyStore): TokenStorage {
  const persistent = isBrowser() && typeof localStorage !== 'undefined' && hasIndexedDb();
  return persistent ? browserStorage({ keyStore }) : memoryStorage();
}

/** A BroadcastChannel per project in browsers (other tabs exist only there); none elsewhere. */
export function defaultChannel(apiKeyId: string): (ChannelLike & { close(): void }) | undefined {
  return isBrowser() && typeof BroadcastChannel !== 'undefined'
    ? new BroadcastChannel(`tessera:${apiKeyId}`)
    : undefined;
}

export function defaultLock(channel: ChannelLike | undefined): TokenLock & { close?(): void } {
  if (typeof navigator !== 'undefined' && navigator.locks) return webLocks();
  if (channel) return broadcastChannelLock({ channel });
  return processLock();
}
