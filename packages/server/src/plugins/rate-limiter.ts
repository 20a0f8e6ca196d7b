import type { RateLimit } from '../config/index.js';
import type { Db } from '../db/connect.js';
import { together } from '../db/prepared.js';
import * as rateLimitsRepository from '../modules/rate-limits/rate-limits.repository.js';

export interface RateLimitResult {
  allowed: boolean;
  count: number;
  /** Seconds until the window resets. */
  retryAfter: number;
}

/** A window to count a hit on. */
export interface Hit {
  scope: string;
  subject: string;
  rule: RateLimit;
}

/**
 * Fixed-window counters in the database, so every instance shares them. One upsert both counts
 * and reads, so parallel requests can never slip past the limit. Keys are hashed: no e-mail
 * address or phone number is stored here.
 */
export class RateLimiter {
  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  async hit(scope: string, subject: string, rule: RateLimit): Promise<RateLimitResult> {
    const key = rateLimitsRepository.rateLimitKey(scope, subject);
    const now = this.now();
    const resetAt = now + rule.window * 1000;
    const window = await rateLimitsRepository.addHits(this.db.kysely, key, 1, now, resetAt);
    return {
      allowed: window.count <= rule.limit,
      count: window.count,
      retryAfter: rateLimitsRepository.secondsLeft(window, now),
    };
  }

  /**
   * One hit on each window, all in one statement (one round trip where `hit` would take one
   * each); the results in the order given. The windows must differ.
   */
  async hitAll(hits: readonly Hit[]): Promise<RateLimitResult[]> {
    const now = this.now();
    const windows = await rateLimitsRepository.addOneEach(
      this.db.kysely,
      hits.map((h) => ({
        key: rateLimitsRepository.rateLimitKey(h.scope, h.subject),
        resetAt: now + h.rule.window * 1000,
      })),
      now,
    );
    return windows.map((window, i) => ({
      allowed: window.count <= hits[i]!.rule.limit,
      count: window.count,
      retryAfter: rateLimitsRepository.secondsLeft(window, now),
    }));
  }

  /** Gives back one unit of each window, together (one statement on PostgreSQL). */
  async refundAll(hits: ReadonlyArray<Pick<Hit, 'scope' | 'subject'>>): Promise<void> {
    await together(
      this.db.kysely,
      hits.map((h) =>
        rateLimitsRepository.refundWrite(rateLimitsRepository.rateLimitKey(h.scope, h.subject)),
      ),
    );
  }

  /** Gives back one unit (e.g. a guess that turned out right, a message that was not sent). */
  async refund(scope: string, subject: string): Promise<void> {
    const key = rateLimitsRepository.rateLimitKey(scope, subject);
    await rateLimitsRepository.refund(this.db.kysely, key);
  }

  /** Deletes windows that have ended. */
  prune(): Promise<number> {
    return rateLimitsRepository.deleteEnded(this.db.kysely, this.now());
  }
}
