/**
 * The device's clock corrected towards the server's. Devices are often minutes off; judging
 * token expiry by a wrong clock would renew on every call (clock ahead) or send expired tokens
 * (clock behind).
 *
 * Samples, best first: the `iat` of a token just minted (the very clock that sets `exp`, and
 * always readable); the `Date` header of any answer (when CORS lets us see it; a proxy may set
 * it); the skew stored with the session (measured earlier, by this device). All have
 * one-second resolution, far below the renewal margin.
 */
export class ServerClock {
  #skewMs = 0;
  #source: 'none' | 'stored' | 'date' | 'iat' = 'none';

  constructor(private readonly localNow: () => number) {}

  /** Milliseconds to add to the device's time to get the server's. */
  get skewMs(): number {
    return this.#skewMs;
  }

  /** The server's time now, as best known (ms). */
  now(): number {
    return this.localNow() + this.#skewMs;
  }

  /** A token minted just now: its `iat` (s, rounded down) is the server's time, give or take a second. */
  observeIssuedAt(iatSeconds: number): void {
    this.#set(iatSeconds * 1000 + 500, 'iat');
  }

  /** An HTTP `Date` header (s resolution); used until a token's `iat` has been seen. */
  observeDateHeader(value: string | null): void {
    if (!value || this.#source === 'iat') return;
    const server = Date.parse(value);
    if (!Number.isNaN(server)) this.#set(server + 500, 'date');
  }

  /** The skew stored with the session, until something fresher is seen. */
  seed(skewMs: number): void {
    if (this.#source === 'none' && Number.isFinite(skewMs)) {
      this.#skewMs = skewMs;
      this.#source = 'stored';
    }
  }

  #set(serverMs: number, source: 'date' | 'iat'): void {
    const skew = serverMs - this.localNow();
    if (!Number.isFinite(skew)) return;
    this.#skewMs = skew;
    this.#source = source;
  }
}
