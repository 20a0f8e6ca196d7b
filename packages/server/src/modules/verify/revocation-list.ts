import { performance } from 'node:perf_hooks';
import { Channels } from '../../db/channels.js';
import type { NoticeListener } from '../../db/notifications.js';
import { OUTAGE_GRACE_MS, STALE_READ_PATIENCE_MS, settledWithin } from '../../db/unavailable.js';
import { DatabaseUnavailableError } from '../../errors.js';
import type { SessionRepository } from '../session/session.repository.js';

/**
 * The sessions revoked recently enough that their access tokens could still be alive, mirrored
 * in memory. It is re-read from the database at most `maxStaleMs` after the last read began, so
 * a revocation made by any instance reaches every instance within that bound, while /verify
 * never reads the database per request. On PostgreSQL, other instances' revocations also arrive
 * as notices within milliseconds of their commit (`follow`); the polling stays as the bound.
 *
 * When the database stops answering (the last read failed, or the read in flight has taken
 * longer than `maxStaleMs`), the list stays trusted until `maxStaleMs + outageGraceMs` after the
 * last successful read began: no revocation can be recorded in an unreachable database, and an
 * instance cut off from a database the others still reach learns of theirs that much later.
 */
export class RevocationList {
  #revoked = new Map<string, number>();
  #freshAt = -Infinity;
  #polling: Promise<void> | undefined;
  #pollAgain: Promise<void> | undefined;
  /** performance.now() when the read in flight began: a stall is measured in real time. */
  #pollingSince: number | undefined;
  #lastReadFailed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sessions: SessionRepository,
    /** How long revoked sessions matter: the access-token lifetime plus clock leeway, in ms. */
    private readonly horizonMs: number,
    private readonly maxStaleMs = 1000,
    private readonly now: () => number = Date.now,
    private readonly outageGraceMs = OUTAGE_GRACE_MS,
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

  /** True when the list is recent enough to answer from memory (see the class comment). */
  fresh(): boolean {
    const age = this.now() - this.#freshAt;
    if (age < this.maxStaleMs) return true;
    return this.#databaseTroubled() && age < this.maxStaleMs + this.outageGraceMs;
  }

  /**
   * Resolves once the list may answer: at once when `fresh()`; otherwise after a re-read, waited
   * for at most STALE_READ_PATIENCE_MS while the list is within the outage grace (past it, the
   * list answers from memory and the read goes on). Past the grace it fails closed: at once when
   * the database is known not to answer, else with the re-read's own error.
   */
  async ready(): Promise<void> {
    if (this.fresh()) return;
    const reading = this.refresh();
    const withinGrace = () => this.now() - this.#freshAt < this.maxStaleMs + this.outageGraceMs;
    if (withinGrace()) {
      await settledWithin(reading, STALE_READ_PATIENCE_MS);
      if (this.fresh() || withinGrace()) {
        reading.catch(() => {});
        return;
      }
    }
    if (this.#databaseTroubled()) {
      reading.catch(() => {});
      throw new DatabaseUnavailableError();
    }
    await reading;
  }

  #databaseTroubled(): boolean {
    if (this.#lastReadFailed) return true;
    return this.#pollingSince !== undefined && performance.now() - this.#pollingSince >= this.maxStaleMs;
  }

  /** Re-reads the recent revocations (one shared read at a time). */
  refresh(): Promise<void> {
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
      this.#pollingSince = undefined;
    });
    return this.#polling;
  }

  /**
   * A re-read that begins after this call (the rows changed, or notices may have been missed): the
   * read in flight may have begun before the change, so this one queues behind it; callers
   * meanwhile share the queued one.
   */
  refreshAfterChange(): Promise<void> {
    this.#pollAgain ??= (this.#polling ?? Promise.resolve())
      .catch(() => {})
      .then(() => {
        this.#pollAgain = undefined;
        return this.refresh();
      });
    return this.#pollAgain;
  }

  /**
   * Takes other instances' revocations from their notices as they commit (PostgreSQL), and
   * re-reads the whole list each time listening begins (notices sent meanwhile are lost). Polling
   * goes on beside it: it bounds the delay should a notice never come.
   */
  follow(notices: NoticeListener): void {
    notices.on(Channels.revocations, (detail) => {
      const sessions = detail.sessions;
      if (Array.isArray(sessions)) {
        for (const id of sessions) if (typeof id === 'string') this.add(id);
      } else {
        this.refreshAfterChange().catch(() => {});
      }
    });
    notices.onListening(() => {
      this.refreshAfterChange().catch(() => {});
    });
  }

  async #poll(): Promise<void> {
    const startedAt = this.now();
    this.#pollingSince = performance.now();
    // Re-read the whole horizon each time: a revocation stamped by another instance's clock
    // can never be skipped by a cursor, and the set is small (only recent revocations).
    let rows: Array<{ id: string; revoked_at: number }>;
    try {
      rows = await this.sessions.revokedSince(startedAt - this.horizonMs);
    } catch (error) {
      this.#lastReadFailed = true;
      throw error;
    }
    this.#lastReadFailed = false;
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
