import type { OAuthTokenBundle } from '@tessera/core';
import { sha256 } from './web-crypto.js';

const MAX_REMEMBERED = 10_000;

/**
 * Renews refresh tokens one at a time per token, within this process.
 *
 * A page often sends several requests at once (the document, a few fetches) that all carry the same
 * expired access cookie and the same refresh cookie. Rotation makes a refresh token single-use, so
 * only the first may call Tessera; the others wait for its answer (single flight). Requests that
 * arrive just after, still carrying the old cookie because the browser had not stored the new one
 * yet, get the same answer from a short memo instead of presenting a spent token — which Tessera
 * would take for reuse once its grace window (`TESSERA_REFRESH_GRACE`) is over. Across processes,
 * Tessera's own grace answers the second instance with the same successor.
 *
 * Tokens are keyed by their SHA-256, so no refresh token is kept as a map key; the memo holds the
 * successor bundle, which the process would hold anyway while answering.
 */
export class Renewer {
  readonly #inflight = new Map<string, Promise<OAuthTokenBundle>>();
  readonly #recent = new Map<string, { bundle: OAuthTokenBundle; until: number }>();
  readonly #refresh: (token: string) => Promise<OAuthTokenBundle>;
  readonly #memoMs: number;
  readonly #now: () => number;

  constructor(refresh: (token: string) => Promise<OAuthTokenBundle>, memoMs: number, now: () => number) {
    this.#refresh = refresh;
    this.#memoMs = memoMs;
    this.#now = now;
  }

  async renew(refreshToken: string): Promise<OAuthTokenBundle> {
    // From here to `#inflight.set` nothing awaits: of two calls with one token, whichever resumes
    // after its digest first starts the renewal, and the other finds it.
    const key = await sha256(refreshToken);
    const now = this.#now();
    const remembered = this.#recent.get(key);
    if (remembered && remembered.until > now) return remembered.bundle;
    const running = this.#inflight.get(key);
    if (running) return running;
    const started = this.#refresh(refreshToken).then(
      (bundle) => {
        this.#inflight.delete(key);
        this.#remember(key, bundle);
        return bundle;
      },
      (error: unknown) => {
        this.#inflight.delete(key);
        throw error;
      },
    );
    this.#inflight.set(key, started);
    return started;
  }

  #remember(key: string, bundle: OAuthTokenBundle): void {
    if (this.#memoMs <= 0) return;
    const now = this.#now();
    for (const [k, entry] of this.#recent) {
      // Insertion order is expiry order (one memo length for all): stop at the first live entry.
      if (entry.until > now && this.#recent.size < MAX_REMEMBERED) break;
      this.#recent.delete(k);
    }
    this.#recent.set(key, { bundle, until: now + this.#memoMs });
  }
}
