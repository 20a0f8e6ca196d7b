import type { Logger } from 'pino';
import { describeDatabaseError, type OutageKind, outageKind } from './unavailable.js';

/** How often, while an outage lasts, the database is pinged to see whether it is back. */
export const OUTAGE_PROBE_MS = 1_000;
/**
 * A storage-full (or failing) episode keeps readiness at 503 this long after its last failed
 * write, unless a write succeeds first: an instance out of rotation writes nothing, so it must
 * rejoin by itself and try again (as with delivery, modules/health/delivery-health.ts).
 */
export const STORAGE_FULL_READY_AFTER_MS = 30_000;
/**
 * A full disk still takes writes that need no new space (an update in place), so a commit ends a
 * storage-full episode only once no write has failed for this long.
 */
export const STORAGE_FULL_QUIET_MS = 5_000;

interface Episode {
  kind: OutageKind;
  code: string | undefined;
  reason: string;
  startedAt: number;
  lastFailureAt: number;
  /** Requests answered 503 for it. */
  refused: number;
  /** Readiness probes answered 503 for it. */
  unready: number;
}

/**
 * One database outage at a time, as this instance sees it: logged once when it starts (at
 * `error`, with the driver's code and message, no stack) and once when it ends (at `info`, with
 * how long it lasted and how many requests and readiness probes were answered 503), instead of an
 * error line with a stack per request. It ends when a ping succeeds (checked every
 * OUTAGE_PROBE_MS while it lasts) — for a full or failing SQLite disk, when a write commits
 * after STORAGE_FULL_QUIET_MS without a failed one.
 */
export class DatabaseOutage {
  #episode: Episode | undefined;
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  #stopped = false;
  readonly #ping: () => Promise<void>;
  readonly #logger: Pick<Logger, 'error' | 'info'>;
  readonly #now: () => number;
  readonly #probeMs: number;

  constructor(
    ping: () => Promise<void>,
    logger: Pick<Logger, 'error' | 'info'>,
    options: { now?: () => number; probeMs?: number } = {},
  ) {
    this.#ping = ping;
    this.#logger = logger;
    this.#now = options.now ?? Date.now;
    this.#probeMs = options.probeMs ?? OUTAGE_PROBE_MS;
  }

  /** The outage under way, if any. */
  get kind(): OutageKind | undefined {
    return this.#episode?.kind;
  }

  /** A request was answered 503 because of `error` (a database unavailable error). */
  refused(error: unknown): void {
    this.#failed(error).refused++;
  }

  /**
   * A readiness probe was answered 503 because of `error`; without one, for the outage under way
   * (counted only: it is not a new failure).
   */
  unready(error?: unknown): void {
    if (error === undefined) {
      if (this.#episode) this.#episode.unready++;
      return;
    }
    this.#failed(error).unready++;
  }

  /**
   * Why readiness must fail although the database answers a read: its storage cannot take
   * writes (SQLite full or failing) and no write has committed since, within
   * STORAGE_FULL_READY_AFTER_MS of the last failure.
   */
  storageFull(): boolean {
    const episode = this.#episode;
    return (
      episode?.kind === 'storage-full' && this.#now() - episode.lastFailureAt < STORAGE_FULL_READY_AFTER_MS
    );
  }

  /**
   * A write committed (SQLite): a storage-full episode is over, once no write has failed for
   * STORAGE_FULL_QUIET_MS.
   */
  wrote(): void {
    const episode = this.#episode;
    if (episode?.kind === 'storage-full' && this.#now() - episode.lastFailureAt >= STORAGE_FULL_QUIET_MS)
      this.#end();
  }

  /** A storage check (ping and read) passed: an unreachable or read-only episode is over. */
  reachable(): void {
    if (this.#episode && this.#episode.kind !== 'storage-full') this.#end();
  }

  /** Stops probing (at shutdown). */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#probe);
    this.#probe = undefined;
  }

  #failed(error: unknown): Episode {
    const now = this.#now();
    const kind = outageKind(error);
    let episode = this.#episode;
    if (episode && episode.kind !== kind) {
      // Another kind of failure (a full disk after a stall): one episode ends, another starts.
      this.#end();
      episode = undefined;
    }
    if (!episode) {
      const { code, reason } = describeDatabaseError(error);
      episode = { kind, code, reason, startedAt: now, lastFailureAt: now, refused: 0, unready: 0 };
      this.#episode = episode;
      this.#logger.error(
        { outage: kind, code, reason },
        `database outage began (${KIND_TEXT[kind]}): what needs the database is answered 503 until it is back; logged once per outage`,
      );
      this.#startProbing();
    }
    episode.lastFailureAt = now;
    return episode;
  }

  #startProbing(): void {
    if (this.#probe || this.#stopped || this.#episode?.kind === 'storage-full') return;
    this.#probe = setInterval(() => void this.#probeOnce(), this.#probeMs);
    this.#probe.unref();
  }

  async #probeOnce(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    try {
      await this.#ping();
      this.reachable();
    } catch {
      // Still away: the next probe tries again.
    } finally {
      this.#probing = false;
    }
  }

  #end(): void {
    const episode = this.#episode;
    if (!episode) return;
    this.#episode = undefined;
    clearInterval(this.#probe);
    this.#probe = undefined;
    this.#logger.info(
      {
        outage: episode.kind,
        code: episode.code,
        durationMs: this.#now() - episode.startedAt,
        refusedRequests: episode.refused,
        failedReadinessProbes: episode.unready,
      },
      `database outage over (${KIND_TEXT[episode.kind]})`,
    );
  }
}

const KIND_TEXT: Record<OutageKind, string> = {
  unreachable: 'unreachable',
  'storage-full': 'storage full or failing',
  'read-only': 'read-only',
};
