/**
 * A reading of the database's clock whose round trip took longer than this is not used: the
 * moment it was read is known only within half the round trip.
 */
export const SKEW_SAMPLE_MAX_ROUND_TRIP_MS = 100;

/** Where the skew is reported when it passes its threshold, and when it is back under half of it. */
export interface SkewReport {
  skewed(skewMs: number, thresholdMs: number): void;
  recovered(skewMs: number): void;
}

/**
 * This instance's clock against the database's (PostgreSQL), from the database clock that every
 * refresh grant already reads (`clock_timestamp()` in the rotation statement): the service's
 * clock at the middle of the round trip minus the database's, so positive means this instance
 * is ahead. Two instances whose clocks differ show it as two different skews from the same
 * database clock: tokens of the one ahead are refused by the other as "not yet valid" once the
 * difference passes TESSERA_CLOCK_LEEWAY, and refresh grace windows are off by as much.
 *
 * The last usable reading is kept (`seconds`, the `tessera_database_clock_skew_seconds` metric);
 * past `thresholdMs` either way it is reported once, and again when it is back under half of it.
 */
export class ClockSkew {
  #skewMs: number | undefined;
  #reported = false;

  constructor(
    private readonly thresholdMs: number,
    private readonly now: () => number,
    private readonly report?: SkewReport,
  ) {}

  /**
   * A reading of the database's clock (`databaseMs`, epoch milliseconds) by a statement whose
   * round trip took `roundTripMs` and just returned.
   */
  sample(databaseMs: number, roundTripMs: number): void {
    if (!Number.isFinite(databaseMs) || roundTripMs < 0 || roundTripMs > SKEW_SAMPLE_MAX_ROUND_TRIP_MS)
      return;
    const skew = this.now() - roundTripMs / 2 - databaseMs;
    this.#skewMs = skew;
    if (!this.#reported && Math.abs(skew) > this.thresholdMs) {
      this.#reported = true;
      this.report?.skewed(skew, this.thresholdMs);
    } else if (this.#reported && Math.abs(skew) <= this.thresholdMs / 2) {
      this.#reported = false;
      this.report?.recovered(skew);
    }
  }

  /** The last usable skew in seconds (positive: this instance ahead), if any was read. */
  get seconds(): number | undefined {
    return this.#skewMs === undefined ? undefined : this.#skewMs / 1000;
  }
}
