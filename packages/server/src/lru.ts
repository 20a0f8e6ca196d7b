interface Node<K, V> {
  readonly key: K;
  value: V;
  older: Node<K, V> | undefined;
  newer: Node<K, V> | undefined;
}

/**
 * A map of at most `capacity` entries that forgets the least recently used one to make room. The
 * order is a doubly linked list beside the Map, so every operation is O(1) whatever the size. (A
 * Map's own insertion order would not do: after many deletions, reaching its first live key walks
 * over every deleted one still in the table, 22 µs an eviction at 50,000 entries.)
 */
export class Lru<K, V> {
  readonly #nodes = new Map<K, Node<K, V>>();
  #oldest: Node<K, V> | undefined;
  #newest: Node<K, V> | undefined;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.#nodes.size;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    this.#unlink(node);
    this.#append(node);
    return node.value;
  }

  /** The value of `key`, leaving the order as it is (for hot paths). */
  peek(key: K): V | undefined {
    return this.#nodes.get(key)?.value;
  }

  /** The least recently used entry, leaving the order as it is. */
  oldest(): [K, V] | undefined {
    const node = this.#oldest;
    return node === undefined ? undefined : [node.key, node.value];
  }

  /** Stores `value` as the most recently used, evicting the least recently used when full. */
  set(key: K, value: V): void {
    const node = this.#nodes.get(key);
    if (node !== undefined) {
      node.value = value;
      this.#unlink(node);
      this.#append(node);
      return;
    }
    if (this.#nodes.size >= this.capacity) this.delete(this.#oldest!.key);
    const added: Node<K, V> = { key, value, older: undefined, newer: undefined };
    this.#nodes.set(key, added);
    this.#append(added);
  }

  delete(key: K): void {
    const node = this.#nodes.get(key);
    if (node === undefined) return;
    this.#nodes.delete(key);
    this.#unlink(node);
  }

  clear(): void {
    this.#nodes.clear();
    this.#oldest = this.#newest = undefined;
  }

  /** The entries, least recently used first. The current entry may be deleted while iterating. */
  *entries(): IterableIterator<[K, V]> {
    let node = this.#oldest;
    while (node !== undefined) {
      const newer = node.newer;
      yield [node.key, node.value];
      node = newer;
    }
  }

  #unlink(node: Node<K, V>): void {
    if (node.older) node.older.newer = node.newer;
    else this.#oldest = node.newer;
    if (node.newer) node.newer.older = node.older;
    else this.#newest = node.older;
    node.older = node.newer = undefined;
  }

  #append(node: Node<K, V>): void {
    node.older = this.#newest;
    if (this.#newest) this.#newest.newer = node;
    else this.#oldest = node;
    this.#newest = node;
  }
}
