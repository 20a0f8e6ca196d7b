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
