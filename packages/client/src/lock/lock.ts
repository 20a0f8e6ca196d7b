import { ClientErrorCodes, TesseraClientError } from '../errors.js';

/**
 * Mutual exclusion for token renewal across everything that shares the session (tabs, windows,
 * workers). Only one of them may spend a refresh token at a time: a refresh token is single-use,
 * and a second use outside the server's short grace window revokes the whole session.
 *
 * @example
 * ```ts
 * import type { TokenLock } from '@tessera/client';
 *
 * // A lock over your own primitive, e.g. a file lock in Electron's main process.
 * const lock: TokenLock = { run: (name, fn) => myMutex.runExclusive(name, fn) };
 * ```
 */
export interface TokenLock {
  /**
   * Runs `fn` while holding the lock `name`. Rejects with a `lock_timeout`
   * {@link TesseraClientError} when the lock could not be acquired in time.
   */
  run<T>(name: string, fn: () => Promise<T>): Promise<T>;
}

/** True when `promise` settles (either way) within `ms`; the timer never outlives the race. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const lockTimeout = () =>
  new TesseraClientError(
    ClientErrorCodes.lockTimeout,
    'another tab kept the token-renewal lock too long; try again',
  );

/**
 * A lock within this JavaScript realm only (one page, one process). The default where neither
 * Web Locks nor BroadcastChannel exist (Node, React Native), where there are no other tabs.
 *
 * @example
 * ```ts
 * import { createTesseraClient, processLock } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer, apiKeyId, lock: processLock() });
 * ```
 */
export function processLock(options: { timeoutMs?: number } = {}): TokenLock {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const tails = new Map<string, Promise<void>>();
  return {
    async run(name, fn) {
      const previous = tails.get(name) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => {
        release = resolve;
      });
      const tail = previous.then(() => mine);
      tails.set(name, tail);
      try {
        if (!(await settlesWithin(previous, timeoutMs))) throw lockTimeout();
        return await fn();
      } finally {
        release();
        if (tails.get(name) === tail) tails.delete(name);
      }
    },
  };
}
