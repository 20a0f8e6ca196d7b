import type { RateLimit } from '../config/index.js';
import { sha256 } from '../crypto/hash.js';
import type { Db } from '../db/connect.js';
import { Lru } from '../lru.js';
import * as rateLimitsRepository from '../modules/rate-limits/rate-limits.repository.js';
import type { RateLimitResult } from './rate-limiter.js';

/**
 * Windows held in memory at most: about 200 bytes each (key, window, map entry), some 10 MB. An
 * instance sees that many networks within a window's time only in a flood.
 */
export const MAX_WINDOWS = 50_000;

/** What a sync's outcome tells the operator (wired to the log and metrics in context.ts). */
export interface IpLimiterEvents {
  /** A sync failed; `streak` counts the syncs failed in a row, this one included. */
  syncFailed?(error: unknown, streak: number): void;
  /** A sync succeeded after `failed` syncs in a row had failed. */
  syncRecovered?(failed: number): void;
}

interface Window {
  resetAt: number;
  /** The shared count at the last sync, this instance's hits included. */
  base: number;
  /** Hits on this instance since the last sync. */
  pending: number;
}

/**
 * Per-IP request limits: counted in memory, shared through the database.
 *
 * Every request of every endpoint family pays a per-IP check, and a database write per request
 * cost more than the rest of a refresh grant's statements together. So each instance counts in
 * memory and, every `syncMs`, adds what it counted to the shared fixed-window row (the same
 * `rate_limits` table as the exact limits) and reads back the total of all instances. On one
 * instance a limit is exact; across instances a burst can overshoot by what the others counted
 * since their last sync (at most `syncMs` of their traffic). The limits that guard secrets — OTP
 * guesses and codes per identifier, sign-ins per user — stay exact in the database (RateLimiter).
 */
export class IpLimiter {
  /** By key, oldest first: the order windows are let go in (#makeRoom). */
  readonly #windows: Lru<string, Window>;
  #timer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  /** Syncs failed in a row (0 once one succeeds). */
  #failedSyncs = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
    private readonly syncMs = 1000,
    /** At most this many windows are held in memory (see #makeRoom). */
    private readonly maxWindows = MAX_WINDOWS,
    private readonly events: IpLimiterEvents = {},
  ) {
    this.#windows = new Lru(maxWindows);
  }

  /** How many windows are held in memory (for tests and diagnostics). */
  get size(): number {
    return this.#windows.size;
  }

  hit(scope: string, subject: string, rule: RateLimit): RateLimitResult {
    const key = sha256(`ip:${scope}\0${subject}`);
    const now = this.now();
    let window = this.#windows.peek(key);
    if (!window || window.resetAt <= now) {
      if (!window) this.#makeRoom();
      window = { resetAt: now + rule.window * 1000, base: 0, pending: 0 };
      this.#windows.set(key, window);
    }
    window.pending++;
    const count = window.base + window.pending;
    return {
      allowed: count <= rule.limit,
      count,
      retryAfter: Math.max(1, Math.ceil((window.resetAt - now) / 1000)),
    };
  }

  /**
   * Keeps the windows within `maxWindows` when a new one is about to be added: requests from many
   * addresses (a flood from an IPv6 range has as many /64s as it likes) must not grow memory
   * without bound. The oldest window already shared with the database goes: its count lives on in
   * the shared row, and if its address comes back, the next sync (within `syncMs`) reads that
   * count back, so it gains at most one sync's worth of requests, as it could on another
   * instance. An oldest window with hits not yet shared is moved to the end instead, a few times;
   * past that it goes with them (only more new addresses within one sync than the table holds get
   * that far).
   */
  #makeRoom(): void {
    let moved = 0;
    while (this.#windows.size >= this.maxWindows) {
      const [key, window] = this.#windows.oldest()!;
      // A read makes it the newest.
      if (window.pending > 0 && moved++ < 8) this.#windows.get(key);
      else this.#windows.delete(key);
    }
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.sync().catch(() => {});
    }, this.syncMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.sync();
  }

  /**
   * Adds the local counts to the shared rows and reads back the totals (one sync at a time). A
   * failed sync keeps its counts pending, and until one succeeds each instance limits on what it
   * counted itself: the first failure of a run and the recovery are reported (`events`), so an
   * operator learns that limits are no longer shared without a log line every second.
   */
  sync(): Promise<void> {
    this.#syncing ??= this.#sync()
      .then(
        () => {
          const failed = this.#failedSyncs;
          this.#failedSyncs = 0;
          if (failed > 0) this.events.syncRecovered?.(failed);
        },
        (error: unknown) => {
          this.#failedSyncs++;
          this.events.syncFailed?.(error, this.#failedSyncs);
          throw error;
        },
      )
      .finally(() => {
        this.#syncing = undefined;
      });
    return this.#syncing;
  }

  async #sync(): Promise<void> {
    const now = this.now();
    const due: Array<{ window: Window; hits: rateLimitsRepository.WindowHits }> = [];
    for (const [key, window] of this.#windows.entries()) {
      if (window.resetAt <= now) {
        this.#windows.delete(key);
        continue;
      }
      const added = window.pending;
      if (added === 0) continue;
      due.push({ window, hits: { key, hits: added, resetAt: window.resetAt } });
    }
    // One statement for up to HITS_PER_STATEMENT of the addresses seen since the last sync, not
    // one each: a flood from many addresses must not turn a sync into thousands of round trips.
    for (let start = 0; start < due.length; start += rateLimitsRepository.HITS_PER_STATEMENT) {
      const chunk = due.slice(start, start + rateLimitsRepository.HITS_PER_STATEMENT);
      const shared = await rateLimitsRepository.addHitsEach(
        this.db.kysely,
        chunk.map((d) => d.hits),
        now,
      );
      for (const { window, hits } of chunk) {
        const total = shared.get(hits.key)!;
        // Hits counted while the write was under way stay pending for the next sync.
        window.pending -= hits.hits;
        window.base = total.count;
        window.resetAt = total.resetAt;
      }
    }
  }
}
