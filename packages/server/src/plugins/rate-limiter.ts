import type { RateLimit } from '../config/index.js';
import type { Db } from '../db/connect.js';
import { together, type Write } from '../db/prepared.js';
import * as rateLimitsRepository from '../modules/rate-limits/rate-limits.repository.js';

export interface RateLimitResult {
  allowed: boolean;
  count: number;
  /** Seconds until the window resets. */
  retryAfter: number;
}

/** What `hitSteps` counted: the windows of the steps that ran, with their results, in order. */
export interface StepsCounted<H extends Hit> {
  counted: H[];
  results: RateLimitResult[];
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

  /**
   * One hit on each window, step by step: a step is counted only when every window of the steps
   * before it allowed, so a caller refused early never touches the windows of later steps (shared
   * ones, say). `insert` is made only when every window allowed. One statement on PostgreSQL
   * (`hitInSteps`); on SQLite, where a statement costs about a function call, one per step and the
   * insert after. Empty steps are skipped; the windows must differ.
   */
  async hitSteps<H extends Hit>(
    steps: ReadonlyArray<readonly H[]>,
    insert?: rateLimitsRepository.InsertWhenAllowed,
  ): Promise<StepsCounted<H>> {
    const ran = steps.filter((step) => step.length > 0);
    const keys = new Set(ran.flat().map((h) => rateLimitsRepository.rateLimitKey(h.scope, h.subject)));
    if (keys.size !== ran.flat().length) throw new Error('hitSteps: the same window twice');
    const counted: H[] = [];
    const results: RateLimitResult[] = [];
    if (this.db.dialect === 'postgres' && ran.length > 0) {
      const now = this.now();
      const keyed = ran.map((step) =>
        step.map((hit) => ({
          hit,
          key: rateLimitsRepository.rateLimitKey(hit.scope, hit.subject),
          resetAt: now + hit.rule.window * 1000,
          limit: hit.rule.limit,
        })),
      );
      const windows = await rateLimitsRepository.hitInSteps(this.db.kysely, keyed, now, insert);
      for (const step of keyed) {
        if (!windows.has(step[0]!.key)) break;
        for (const { hit, key } of step) {
          const window = windows.get(key);
          if (!window) throw new Error('rate limit upsert returned no row');
          counted.push(hit);
          results.push({
            allowed: window.count <= hit.rule.limit,
            count: window.count,
            retryAfter: rateLimitsRepository.secondsLeft(window, now),
          });
        }
        if (results.some((r) => !r.allowed)) break;
      }
      return { counted, results };
    }
    for (const step of ran) {
      counted.push(...step);
      results.push(...(await this.hitAll(step)));
      if (results.some((r) => !r.allowed)) return { counted, results };
    }
    if (insert) await together(this.db.kysely, insert.writes);
    return { counted, results };
  }

  /** Gives back one unit of each window, together (one statement on PostgreSQL). */
  async refundAll(hits: ReadonlyArray<Pick<Hit, 'scope' | 'subject'>>): Promise<void> {
    await together(this.db.kysely, RateLimiter.refundWrites(hits));
  }

  /** The writes of `refundAll`, for a caller to run with writes of its own (`together`). */
  static refundWrites(hits: ReadonlyArray<Pick<Hit, 'scope' | 'subject'>>): Write[] {
    return hits.map((h) =>
      rateLimitsRepository.refundWrite(rateLimitsRepository.rateLimitKey(h.scope, h.subject)),
    );
  }

  /** Gives back one unit (e.g. a guess that turned out right, a message that was not sent). */
  async refund(scope: string, subject: string): Promise<void> {
    const key = rateLimitsRepository.rateLimitKey(scope, subject);
    await rateLimitsRepository.refund(this.db.kysely, key);
  }

  /**
   * What each window has counted so far, without counting: its count and end, or undefined when
   * it has ended or was never hit (nothing counted). In the order given.
   */
  async peek(
    windows: ReadonlyArray<Pick<Hit, 'scope' | 'subject'>>,
  ): Promise<Array<rateLimitsRepository.RateWindow | undefined>> {
    const keys = windows.map((w) => rateLimitsRepository.rateLimitKey(w.scope, w.subject));
    const found = await rateLimitsRepository.current(this.db.kysely, keys, this.now());
    return keys.map((key) => found.get(key));
  }

  /** Deletes windows that have ended. */
  prune(): Promise<number> {
    return rateLimitsRepository.deleteEnded(this.db.kysely, this.now());
  }
}
