/**
 * The device's clock corrected towards the server's. Devices are often minutes off; judging
 * token expiry by a wrong clock would renew on every call (clock ahead) or send expired tokens
 * (clock behind). Samples come from fresh tokens' `iat` (always readable) and the `Date` header
 * (when CORS lets us see it); both have one-second resolution, far below the renewal margin.
 */
export class ServerClock {
  #skewMs = 0;
  #observed = false;

  constructor(private readonly localNow: () => number) {}

  /** Milliseconds to add to the device's time to get the server's. */
  get skewMs(): number {
    return this.#skewMs;
  }

  set skewMs(value: number) {
    if (Number.isFinite(value)) this.#skewMs = value;
  }

  /** Takes a skew remembered from earlier (stored with the session) until a fresh sample comes. */
  seed(skewMs: number): void {
    if (!this.#observed) this.skewMs = skewMs;
  }

  /** The server's time now, as best known (ms). */
  now(): number {
    return this.localNow() + this.#skewMs;
  }

  /** A token minted just now: its `iat` (s, rounded down) is the server's time, give or take a second. */
  observeIssuedAt(iatSeconds: number): void {
    this.#observed = true;
    this.skewMs = iatSeconds * 1000 + 500 - this.localNow();
  }

  /** An HTTP `Date` header (s resolution). Ignored when unreadable. */
  observeDateHeader(value: string | null): void {
    if (!value) return;
    const server = Date.parse(value);
    if (Number.isNaN(server)) return;
    this.#observed = true;
    this.skewMs = server + 500 - this.localNow();
  }
}
