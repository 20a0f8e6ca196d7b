import { lockTimeout, type TokenLock } from './lock.js';

/**
 * Options of {@link webLocks}.
 *
 * @example
 * ```ts
 * const options: WebLocksOptions = { timeoutMs: 10_000 };
 * ```
 */
export interface WebLocksOptions {
  /** Default `navigator.locks`. */
  locks?: LockManager;
  /** How long to wait for the lock before failing with `lock_timeout`. Default 20 s. */
  timeoutMs?: number;
}

/**
 * The Web Locks API (`navigator.locks`): the browser serialises every tab and worker of the
 * origin, and releases a lock by itself when its holder's tab closes or crashes. The default in
 * browsers that have it.
 *
 * @example
 * ```ts
 * import { createTesseraClient, webLocks } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer, apiKeyId, lock: webLocks({ timeoutMs: 10_000 }) });
 * ```
 */
export function webLocks(options: WebLocksOptions = {}): TokenLock {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return {
    async run(name, fn) {
      const locks = options.locks ?? globalThis.navigator?.locks;
      if (!locks) throw new Error('navigator.locks is not available here; pass another lock');
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      let granted = false;
      try {
        return await locks.request(name, { signal: controller.signal }, async () => {
          granted = true;
          clearTimeout(timer);
          return fn();
        });
      } catch (error) {
        if (!granted && controller.signal.aborted) throw lockTimeout();
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
