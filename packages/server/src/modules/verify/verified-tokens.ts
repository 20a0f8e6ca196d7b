import type { AccessTokenClaims } from '@tessera/core';

/** What verifying a token established once: its claims and the key that signed it. */
export interface Verified {
  claims: AccessTokenClaims;
  kid: string;
}

interface Entry extends Verified {
  /** The whole token: a hit compares it, so only the very token that was verified is found. */
  token: string;
  bytes: number;
}

/** At most this many tokens are cached, whatever their size. */
export const CACHE_ENTRIES = 50_000;

/**
 * The cache key: the token's last 22 characters, which are its signature's (132 bits an ECDSA
 * signature makes unpredictable). A Map hashes its string keys on every lookup, and a token comes
 * from the request body as a new string each time: hashing 22 characters instead of 600–1,100
 * was about 1 µs a lookup (docs/BENCHMARKS.md, "Design measurements"). A hit still compares the
 * whole token.
 */
const KEY_CHARS = 22;

/** Slots of the doorkeeper: 65,536 fingerprints, 256 KB. */
const SEEN_SLOTS = 1 << 16;

function keyOf(token: string): string {
  return token.length > KEY_CHARS ? token.slice(-KEY_CHARS) : token;
}

/** FNV-1a of the key's characters: a 32-bit fingerprint, never 0 (an empty slot). */
function fingerprint(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h | 1;
}

/**
 * What one cached token costs in memory, estimated: the token string (one byte a character), its
 * parsed claims (strings about as long as the decoded payload, three quarters of the token, plus
 * the object and its properties), the entry and its map and ring slots. Measured on the V8 heap
 * (live bytes after a full GC, 10,000 cached tokens of 613 and of 1,093 characters): 1,446 and
 * 2,286 bytes a token, about 1.75 × length + 375; this rounds up to 2 × length + 256. The budget
 * counts live bytes: the garbage collector's slack comes on top (docs/OPERATIONS.md, "Sizing").
 */
export function cachedTokenBytes(token: string): number {
  return 2 * token.length + 256;
}

/**
 * The tokens /verify has verified, bounded by bytes (`maxBytes`, estimated by cachedTokenBytes)
 * and by CACHE_ENTRIES, the oldest evicted first.
 *
 * A token is cached the second time it is verified, not the first (a doorkeeper, as in TinyLFU or
 * a CDN's "cache on second hit"): the first verification leaves only a 32-bit fingerprint in a
 * fixed table. A token used once — a flood of distinct tokens, or a client that verifies each
 * token a single time — then neither evicts the tokens in use nor fills the heap with entries
 * that are never read again (each would be promoted to the old generation and collected there);
 * a token used again costs one more signature check, once. Only verified tokens leave a
 * fingerprint, so a stranger's garbage cannot reach the cache at all.
 */
export class VerifiedTokens {
  readonly #entries = new Map<string, Entry>();
  /** The cached keys in insertion order, as a ring from #oldest, #count long. */
  readonly #order: Array<string | undefined>;
  #oldest = 0;
  #count = 0;
  #bytes = 0;
  readonly #seenOnce = new Int32Array(SEEN_SLOTS);

  constructor(
    private readonly maxBytes: number,
    private readonly maxEntries = CACHE_ENTRIES,
  ) {
    this.#order = new Array(maxEntries);
  }

  /** Entries and estimated bytes (for metrics and tests). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  /** What verifying `token` established, if it is cached. */
  get(token: string): Verified | undefined {
    const entry = this.#entries.get(keyOf(token));
    return entry !== undefined && entry.token === token ? entry : undefined;
  }

  /**
   * `token` has just been verified: caches it if it was verified before (see the class), or
   * updates its entry if it is cached (verified again after its key was reloaded).
   */
  add(token: string, verified: Verified): void {
    const key = keyOf(token);
    const existing = this.#entries.get(key);
    if (existing !== undefined && existing.token === token) {
      existing.claims = verified.claims;
      existing.kid = verified.kid;
      return;
    }
    if (!this.#seenBefore(key)) return;
    // Another verified token with the same signature tail (not seen in practice): it replaces it.
    if (existing !== undefined) this.delete(existing.token);
    const bytes = cachedTokenBytes(token);
    if (bytes > this.maxBytes) return;
    while (this.#count > 0 && (this.#count === this.maxEntries || this.#bytes + bytes > this.maxBytes))
      this.#evictOldest();
    this.#order[(this.#oldest + this.#count) % this.maxEntries] = key;
    this.#count++;
    this.#bytes += bytes;
    this.#entries.set(key, { claims: verified.claims, kid: verified.kid, token, bytes });
  }

  /**
   * Drops `token`'s entry (an expired token) and its bytes. Its ring slot stays until it is the
   * oldest: #evictOldest skips a slot whose entry is gone.
   */
  delete(token: string): void {
    const key = keyOf(token);
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.token !== token) return;
    this.#bytes -= entry.bytes;
    this.#entries.delete(key);
  }

  /** True the second time `key` is offered (unless another key took its slot in between). */
  #seenBefore(key: string): boolean {
    const h = fingerprint(key);
    const slot = h & (SEEN_SLOTS - 1);
    if (this.#seenOnce[slot] === h) {
      this.#seenOnce[slot] = 0;
      return true;
    }
    this.#seenOnce[slot] = h;
    return false;
  }

  #evictOldest(): void {
    const key = this.#order[this.#oldest];
    this.#order[this.#oldest] = undefined;
    this.#oldest = (this.#oldest + 1) % this.maxEntries;
    this.#count--;
    if (key === undefined) return;
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#bytes -= entry.bytes;
    this.#entries.delete(key);
  }
}
