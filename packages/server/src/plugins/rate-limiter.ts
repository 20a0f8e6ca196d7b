import { sql } from 'kysely';
import type { RateLimit } from '../config/index.js';
import { sha256 } from '../crypto/hash.js';
import type { Db } from '../db/connect.js';
import { prepared } from '../db/prepared.js';

/**
 * Adds `hits` to a fixed window and returns its count and end, in one atomic upsert: a window that
 * has ended starts again from `hits` and ends at `resetAt`. Shared by the exact limits (one hit a
 * call) and the per-IP limits (what an instance counted since its last sync).
 */
export const addHits = prepared((db, key: string, hits: number, now: number, resetAt: number) =>
  db
    .insertInto('rate_limits')
    .values({ key, count: hits, reset_at: resetAt })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        count: sql<number>`case when rate_limits.reset_at <= ${now} then ${hits} else rate_limits.count + ${hits} end`,
        reset_at: sql<number>`case when rate_limits.reset_at <= ${now} then ${resetAt} else rate_limits.reset_at end`,
      }),
    )
    .returning(['count', 'reset_at']),
);

const refundHit = prepared((db, key: string) =>
  db
    .updateTable('rate_limits')
    .set({ count: sql<number>`count - 1` })
    .where('key', '=', key)
    .where('count', '>', 0),
);

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
    const key = sha256(`${scope}\0${subject}`);
    const now = this.now();
    const resetAt = now + rule.window * 1000;
    const [row] = (await addHits(this.db.kysely, key, 1, now, resetAt)).rows;
    if (!row) throw new Error('rate limit upsert returned no row');
    const count = Number(row.count);
    return {
      allowed: count <= rule.limit,
      count,
      retryAfter: Math.max(1, Math.ceil((Number(row.reset_at) - now) / 1000)),
    };
  }

  /** Gives back one unit (e.g. a guess that turned out right, a message that was not sent). */
  async refund(scope: string, subject: string): Promise<void> {
    const key = sha256(`${scope}\0${subject}`);
    await refundHit(this.db.kysely, key);
  }

  /** Deletes windows that have ended. */
  async prune(): Promise<number> {
    const result = await this.db.kysely
      .deleteFrom('rate_limits')
      .where('reset_at', '<=', this.now())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
