/**
 * Work still running that shutdown waits for before storage closes: writes made beside answers
 * already given (audit events, guess-budget refunds). Their failures are reported where they are
 * made; one that rejects anyway is forgotten here as one that resolves (no unhandled rejection,
 * and `drain` still waits for the rest).
 */
export class Pending {
  readonly #running = new Set<Promise<void>>();

  /** Tracks `work` until it settles, and returns it. */
  track(work: Promise<void>): Promise<void> {
    this.#running.add(work);
    const forget = () => {
      this.#running.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  /** Waits for everything tracked now to settle. */
  async drain(): Promise<void> {
    await Promise.allSettled(this.#running);
  }
}
