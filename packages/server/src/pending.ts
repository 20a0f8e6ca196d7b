/**
 * Work still running that shutdown waits for before storage closes: writes made beside answers
 * already given (audit events, guess-budget refunds). Its promises are expected not to reject
 * (their failures are reported where they are made).
 */
export class Pending {
  readonly #running = new Set<Promise<void>>();

  /** Tracks `work` until it settles, and returns it. */
  track(work: Promise<void>): Promise<void> {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
    return work;
  }

  /** Waits for everything tracked now. */
  async drain(): Promise<void> {
    await Promise.all(this.#running);
  }
}
