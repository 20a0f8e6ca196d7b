/**
 * A map of at most `capacity` entries that forgets the least recently used one to make room: the
 * order lives in the Map's own insertion order (a read moves its key to the end), so every
 * operation is O(1) and eviction takes the first key without walking the map.
 */
export class Lru<K, V> {
  readonly #entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** The value of `key`, leaving the order as it is (no Map writes: for hot paths). */
  peek(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** Stores `value` as the most recently used, evicting the least recently used when full. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.capacity) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, value);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }
}
