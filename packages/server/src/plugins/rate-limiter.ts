import type { RateLimit } from '../config/index.js';
import type { Db } from '../db/connect.js';
import * as rateLimitsRepository from '../modules/rate-limits/rate-limits.repository.js';

export interface RateLimitResult {
  allowed: boolean;
  count: number;
  /** Seconds until the window resets. */
  retryAfter: number;
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
