import type { SessionRepository } from '../session/session.repository.js';

/**
 * The sessions revoked recently enough that their access tokens could still be alive, mirrored
 * in memory. It is re-read from the database at most `maxStaleMs` after the last read began, so
 * a revocation made by any instance reaches every instance within that bound, while /verify
 * never reads the database per request.
 */
export class RevocationList {
  #revoked = new Map<string, number>();
  #freshAt = -Infinity;
  #polling: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sessions: SessionRepository,
    /** How long revoked sessions matter: the access-token lifetime plus clock leeway, in ms. */
    private readonly horizonMs: number,
    private readonly maxStaleMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Polls in the background so requests rarely wait. */
  start(): void {
    this.#timer = setInterval(
      () => {
        this.refresh().catch(() => {});
      },
      Math.max(100, this.maxStaleMs / 2),
    );
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** True when the list is recent enough to answer from memory. */
  fresh(): boolean {
    return this.now() - this.#freshAt < this.maxStaleMs;
  }

  /** Re-reads the recent revocations (one shared read at a time). */
  refresh(): Promise<void> {
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
    });
    return this.#polling;
  }

  async #poll(): Promise<void> {
    const startedAt = this.now();
    // Re-read the whole horizon each time: a revocation stamped by another instance's clock
    // can never be skipped by a cursor, and the set is small (only recent revocations).
    const rows = await this.sessions.revokedSince(startedAt - this.horizonMs);
    const next = new Map<string, number>();
    for (const row of rows) next.set(row.id, row.revoked_at);
    for (const [id, at] of this.#revoked)
      if (!next.has(id) && at > startedAt - this.horizonMs) next.set(id, at);
    this.#revoked = next;
    this.#freshAt = startedAt;
  }

  /** Records a revocation made by this instance at once. */
  add(sessionId: string): void {
    this.#revoked.set(sessionId, this.now());
  }

  has(sessionId: string): boolean {
    return this.#revoked.has(sessionId);
  }
}
