import {
  isDatabaseUnavailable,
  OUTAGE_GRACE_MS,
  STALE_READ_PATIENCE_MS,
  settledWithin,
} from '../../db/unavailable.js';
import { Lru } from '../../lru.js';
import type { Project } from './project.js';

/**
 * Once a read failed because the database is unavailable, lookups that would need the database
 * fail at once with that error (a circuit breaker) until this long after the failure; the first
 * lookup after it reads again (the probe). So with the database away, /verify answers 503 at once
 * instead of each request waiting for its own read to time out (2–5 s).
 */
export const AWAY_RETRY_MS = 1_000;

/** How long a lookup answers from memory (a change made on another instance shows within it). */
export const CACHE_MS = 5_000;
/** Projects held in memory (by API key id and by id); the least recently used one leaves first. */
export const KNOWN_PROJECTS_CACHED = 10_000;
/**
 * "No such project" answers held in memory, apart from the known projects: a stranger's flood of
 * made-up API key ids only ever churns this small cache, never the projects real requests use.
 */
export const UNKNOWN_IDS_CACHED = 1_000;

/**
 * The shape an API key id must have before the database is asked about it: 1–100 characters
 * (what the API_KEY_ID header may carry), each an RFC 3986 unreserved one. Tessera mints
 * `pk_` + 22 base64url characters (randomToken(16)) and always has; the rule is wider so that ids
 * made by hand or imported keep working. Anything else is unknown without a read.
 */
const API_KEY_ID_SHAPE = /^[A-Za-z0-9._~-]{1,100}$/;

/** Whether `apiKeyId` could be a project's API key id at all (see API_KEY_ID_SHAPE). */
export const isWellFormedApiKeyId = (apiKeyId: string): boolean => API_KEY_ID_SHAPE.test(apiKeyId);

interface CacheEntry {
  project: Project | undefined;
  until: number;
}

/**
 * The projects one instance holds in memory, by cache key (an API key id, or `id:` + a project
 * id): known projects in one bounded LRU, "no such project" answers in another, smaller one, and
 * at most one database read in flight per key.
 */
export class ProjectCache {
  readonly #known = new Lru<string, { project: Project; until: number }>(KNOWN_PROJECTS_CACHED);
  readonly #unknown = new Lru<string, { until: number }>(UNKNOWN_IDS_CACHED);
  /** The database read in flight per key: concurrent misses share it (and its error). */
  readonly #reading = new Map<string, Promise<Project | undefined>>();
  /** The last lookup failed because the database is unavailable (cleared by the next success). */
  #databaseAway = false;
  /** The last read's unavailable error and when it failed (the breaker; cleared by a success). */
  #away: { error: unknown; at: number } | undefined;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * A cached lookup. While the database is unavailable, an entry that expired less than
   * OUTAGE_GRACE_MS ago still answers (projects rarely change), so /verify and signed-in
   * requests keep working through a short outage; so it does when its re-read has not answered
   * within STALE_READ_PATIENCE_MS (a database that stops answering shows only at the statement
   * timeout), while the read goes on.
   */
  async read(key: string, read: () => Promise<Project | undefined>): Promise<Project | undefined> {
    const hit = this.#entry(key, true);
    const now = this.#now();
    if (hit && hit.until > now) return hit.project;
    const away = this.#away;
    if (away && now - away.at < AWAY_RETRY_MS) {
      // Known away: no read until the next probe; memory answers within the grace, else the error.
      if (hit && now - hit.until < OUTAGE_GRACE_MS) return hit.project;
      throw away.error;
    }
    const reading = this.#readOnce(key, read);
    if (hit && now - hit.until < OUTAGE_GRACE_MS && !(await settledWithin(reading, STALE_READ_PATIENCE_MS))) {
      reading.catch(() => {});
      return hit.project;
    }
    try {
      return await reading;
    } catch (error) {
      if (!hit || !isDatabaseUnavailable(error) || now - hit.until >= OUTAGE_GRACE_MS) throw error;
      this.#databaseAway = true;
      return hit.project;
    }
  }

  /** One database read per key at a time: a caller arriving while one is in flight shares it. */
  #readOnce(key: string, read: () => Promise<Project | undefined>): Promise<Project | undefined> {
    const inFlight = this.#reading.get(key);
    if (inFlight) return inFlight;
    const started = this.#now();
    const done = (): boolean => {
      const current = this.#reading.get(key) === reading;
      if (current) this.#reading.delete(key);
      return current;
    };
    const reading: Promise<Project | undefined> = Promise.resolve()
      .then(read)
      .then(
        (project) => {
          this.#databaseAway = false;
          this.#away = undefined;
          if (done()) this.#remember(key, project, started + CACHE_MS);
          return project;
        },
        (error: unknown) => {
          done();
          if (isDatabaseUnavailable(error)) {
            this.#databaseAway = true;
            this.#away = { error, at: this.#now() };
          }
          throw error;
        },
      );
    this.#reading.set(key, reading);
    return reading;
  }

  #remember(key: string, project: Project | undefined, until: number): void {
    if (project) {
      this.#unknown.delete(key);
      this.#known.set(key, { project, until });
    } else {
      this.#known.delete(key);
      this.#unknown.set(key, { until });
    }
  }

  /**
   * The cached answer for `key`; `use` marks a known project as just used (`read`). The /verify
   * hot path (`peek`) leaves the order alone: moving a key costs two Map writes per request, and
   * each project is stored again, so moved to the end, at least every CACHE_MS it is read.
   */
  #entry(key: string, use = false): CacheEntry | undefined {
    const known = use ? this.#known.get(key) : this.#known.peek(key);
    if (known) return known;
    const unknown = this.#unknown.peek(key);
    return unknown && { project: undefined, until: unknown.until };
  }

  /** The entry of `key`, fresh or within the outage grace; null when only the database can tell. */
  peek(key: string): Project | undefined | null {
    const hit = this.#entry(key);
    if (!hit) return null;
    const now = this.#now();
    if (hit.until > now || (this.#databaseAway && now - hit.until < OUTAGE_GRACE_MS)) return hit.project;
    return null;
  }

  /** Drops `key`; a read of it already in flight answers its callers but is not remembered. */
  forget(key: string): void {
    this.#known.delete(key);
    this.#unknown.delete(key);
    this.#reading.delete(key);
  }

  clear(): void {
    this.#known.clear();
    this.#unknown.clear();
    this.#reading.clear();
  }

  sizes(): { known: number; unknown: number; reading: number } {
    return { known: this.#known.size, unknown: this.#unknown.size, reading: this.#reading.size };
  }
}
