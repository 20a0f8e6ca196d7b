import { isDatabaseUnavailable } from './unavailable.js';

export interface TurnBatchOptions<T, R> {
  /**
   * Runs a batch of two or more in one statement; one result per item, in the items' order. It
   * rejects only when the statement failed, so nothing of the batch was written: every item is
   * then run again alone. Work that could fail after the statement (parsing a row, say) belongs
   * to each item's caller, once `add` has resolved.
   */
  many(items: T[]): Promise<R[]>;
  /** Runs one item alone: a batch of one, and each item of a batch that failed as a whole. */
  alone(item: T): Promise<R>;
  /** Most items in one batch. */
  max: number;
  /**
   * Items with the same key never share a batch (a row cannot be changed twice in one statement):
   * a repeat waits for the next one. Batches are sorted by key, so that two processes' batches
   * over the same rows lock them in one order.
   */
  key?(item: T): string;
  /**
   * Told once when a batch failed as a whole for a reason other than the database being away (or
   * too slow), once its items have started again alone (whatever it throws, they go on). Those retries may all succeed, so without
   * this a batch statement that always fails would only show as every item costing its own
   * statement. When the database is away the items fail, and their requests are logged.
   */
  onBatchFailed?(error: unknown, size: number): void;
}

interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * PostgreSQL: the writes of one kind that arrive in the same turn of the event loop go out as one
 * statement, so that under load each pays a fraction of a round trip and of a commit, and alone it
 * waits for nothing but the end of the turn (`setImmediate`). A batch that fails as a whole is run
 * item by item, each settled by its own statement as it would have been unbatched, so a failure
 * stays with the item that caused it. When the database is away or too slow (connection lost or
 * refused, no answer, a statement or lock timeout), every item gets the error at once: alone each
 * would wait as long again, and a database that is already too slow would get a statement per
 * item instead of one (the rows these batches write are locked only for the length of one
 * autocommit statement, so a timeout means the database, not one item's row).
 */
export class TurnBatch<T, R> {
  #waiting: Array<Waiting<T, R>> = [];
  #scheduled = false;

  constructor(private readonly options: TurnBatchOptions<T, R>) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    const { key, max } = this.options;
    const batch: Array<Waiting<T, R>> = [];
    const later: Array<Waiting<T, R>> = [];
    const keys = new Set<string>();
    for (const waiting of this.#waiting) {
      const k = key?.(waiting.item);
      if (batch.length < max && (k === undefined || !keys.has(k))) {
        if (k !== undefined) keys.add(k);
        batch.push(waiting);
      } else later.push(waiting);
    }
    this.#waiting = later;
    if (later.length > 0) setImmediate(() => this.#flush());
    else this.#scheduled = false;
    if (batch.length === 1) {
      this.#alone(batch[0]!);
      return;
    }
    if (key) batch.sort((a, b) => (key(a.item) < key(b.item) ? -1 : 1));
    let running: Promise<R[]>;
    try {
      running = this.options.many(batch.map((w) => w.item));
    } catch (error) {
      // Thrown before any statement was sent: as a batch that failed and wrote nothing.
      running = Promise.reject(error);
    }
    running.then(
      (results) => {
        batch.forEach((w, i) => {
          w.resolve(results[i]!);
        });
      },
      (error: unknown) => {
        if (isDatabaseUnavailable(error)) {
          for (const w of batch) w.reject(error);
          return;
        }
        // The retries first: a failing listener must not leave its items waiting forever.
        for (const w of batch) this.#alone(w);
        try {
          this.options.onBatchFailed?.(error, batch.length);
        } catch {
          // Only a report; the items are already on their way.
        }
      },
    );
  }

  #alone(waiting: Waiting<T, R>): void {
    let running: Promise<R>;
    try {
      running = this.options.alone(waiting.item);
    } catch (error) {
      waiting.reject(error);
      return;
    }
    running.then(waiting.resolve, waiting.reject);
  }
}
