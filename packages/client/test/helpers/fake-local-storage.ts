import type { LocalStorageLike } from '@tessera/client';

/** A localStorage look-alike whose contents a test can read, copy and tamper with. */
export class FakeLocalStorage implements LocalStorageLike {
  readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, String(value));
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
  /** Everything stored, as one string (what a copy of the browser profile would hold). */
  dump(): string {
    return JSON.stringify([...this.items]);
  }
}

/**
 * localStorage as Chromium gives it to tabs (a process each): every tab reads its own copy, and
 * hears of another tab's writes a moment later, in no order with anything else (the renewal lock,
 * BroadcastChannel). Here a tab's copy catches up right after it served a stale read.
 */
export class TabbedLocalStorage {
  readonly #tabs: TabCopy[] = [];

  /** A new tab's copy, holding what the others wrote so far. */
  tab(): TabCopy {
    const copy = new TabCopy((key, value) => {
      for (const other of this.#tabs) if (other !== copy) other.hear(key, value);
    });
    for (const [key, value] of this.#tabs[0]?.items ?? []) copy.items.set(key, value);
    this.#tabs.push(copy);
    return copy;
  }
}

export class TabCopy implements LocalStorageLike {
  readonly items = new Map<string, string>();
  /** Writes of other tabs not seen here yet. */
  readonly #news: Array<[string, string | null]> = [];
  /** Reads that returned a value another tab had already replaced. */
  staleReads = 0;

  constructor(private readonly tell: (key: string, value: string | null) => void) {}

  getItem(key: string): string | null {
    if (this.#news.some(([k]) => k === key)) {
      this.staleReads++;
      queueMicrotask(() => this.catchUp());
    }
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, String(value));
    this.tell(key, String(value));
  }
  removeItem(key: string): void {
    this.items.delete(key);
    this.tell(key, null);
  }
  hear(key: string, value: string | null): void {
    this.#news.push([key, value]);
  }
  /** Takes in every write of other tabs now. */
  catchUp(): void {
    for (const [key, value] of this.#news.splice(0)) {
      if (value === null) this.items.delete(key);
      else this.items.set(key, value);
    }
  }
}
