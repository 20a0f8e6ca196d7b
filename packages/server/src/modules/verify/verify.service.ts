import { ACCESS_TOKEN_TYP, type AccessTokenClaims, type VerifyReason, VerifyReasons } from '@tessera/core';
import type { KeyStore } from '../../keys/key-store.js';
import { decodeJwt, verifyEs256 } from '../../tokens/jwt.js';
import type { Project } from '../projects/project.js';
import type { ProjectsService } from '../projects/projects.service.js';
import type { RevocationList } from './revocation-list.js';

export type VerifyResult =
  | { success: true; claims: AccessTokenClaims }
  | { success: false; reason: VerifyReason };

/** At most this many tokens are cached, whatever their size. */
const CACHE_ENTRIES = 50_000;

/**
 * What one cached token costs in memory, estimated: the token string (one byte a character), its
 * parsed claims (strings about as long as the decoded payload, three quarters of the token, plus
 * the object and its properties), the entry and its map and ring slots. Measured on the V8 heap
 * (live bytes after a full GC, 10,000 cached tokens of 613 and of 1,093 characters): 1,446 and
 * 2,286 bytes a token, about 1.75 × length + 375; this rounds up to 2 × length + 256 (the former
 * estimate, 3 × length + 256, was half again too high). The budget counts live bytes: the
 * garbage collector's slack comes on top (docs/OPERATIONS.md, "Sizing").
 */
export function cachedTokenBytes(token: string): number {
  return 2 * token.length + 256;
}
const KEY_RELOAD_INTERVAL_MS = 10_000;

function shapeOk(p: Record<string, unknown>): boolean {
  return (
    typeof p.sub === 'string' &&
    typeof p.aud === 'string' &&
    typeof p.sid === 'string' &&
    typeof p.jti === 'string' &&
    Number.isInteger(p.exp) &&
    Number.isInteger(p.iat)
  );
}

/**
 * Verification of access tokens for /verify, introspection and Bearer authentication.
 *
 * A token's signature, header and fixed claims are checked once and the result cached (a valid
 * signature stays valid); expiry, audience, project existence and revocation are checked on
 * every call. Nothing here reads the database per request: projects and revocations come from
 * caches bounded in staleness.
 */
export class VerifyService {
  #verified = new Map<string, { claims: AccessTokenClaims; kid: string; bytes: number }>();
  /**
   * The cached tokens in insertion order, as a ring from #oldest, #count long: the oldest is
   * evicted by key. (Evicting with `map.keys().next()` walks over every entry deleted since the map
   * last compacted; its cost is in docs/BENCHMARKS.md, "Design measurements".) The cache is
   * bounded by bytes (`maxBytes`, estimated by cachedTokenBytes) and by CACHE_ENTRIES.
   */
  #order: Array<string | undefined> = new Array(CACHE_ENTRIES);
  #oldest = 0;
  #count = 0;
  #bytes = 0;
  #lastKeyReload = 0;

  constructor(
    private readonly issuer: string,
    private readonly leewaySeconds: number,
    private readonly keys: KeyStore,
    private readonly projects: ProjectsService,
    private readonly revocations: RevocationList,
    private readonly now: () => number = Date.now,
    /** TESSERA_VERIFY_CACHE_MB, in bytes. */
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {}

  /** The verified-token cache's size: entries and estimated bytes (for metrics and tests). */
  get cacheSize(): { entries: number; bytes: number } {
    return { entries: this.#verified.size, bytes: this.#bytes };
  }

  /** Checks signature, header, type and issuer (not expiry or revocation): the claims or a reason. */
  async authentic(token: string): Promise<AccessTokenClaims | VerifyReason> {
    const cached = this.#verified.get(token);
    // A key withdrawn from the JWKS (retired, or removed after a compromise) ends its tokens.
    if (cached && this.keys.get(cached.kid)) return cached.claims;
    const decoded = decodeJwt(token);
    if (decoded?.header.alg !== 'ES256' || typeof decoded.header.kid !== 'string')
      return VerifyReasons.invalid;
    let key = this.keys.get(decoded.header.kid);
    if (!key && this.now() - this.#lastKeyReload > KEY_RELOAD_INTERVAL_MS) {
      this.#lastKeyReload = this.now();
      await this.keys.reload();
      key = this.keys.get(decoded.header.kid);
    }
    if (!key) return VerifyReasons.unknownKey;
    if (!verifyEs256(decoded, key.publicKey)) return VerifyReasons.invalid;
    const payload = decoded.payload;
    if (decoded.header.typ !== ACCESS_TOKEN_TYP || payload.type !== 'access_token')
      return VerifyReasons.notAccessToken;
    if (payload.iss !== this.issuer) return VerifyReasons.wrongIssuer;
    if (!shapeOk(payload)) return VerifyReasons.invalid;
    const claims = payload as AccessTokenClaims;
    this.#remember(token, { claims, kid: decoded.header.kid });
    return claims;
  }

  #remember(token: string, entry: { claims: AccessTokenClaims; kid: string }): void {
    const existing = this.#verified.get(token);
    if (existing) {
      // Verified again (its key had been reloaded): same token, same place in the ring.
      this.#verified.set(token, { ...entry, bytes: existing.bytes });
      return;
    }
    const bytes = cachedTokenBytes(token);
    if (bytes > this.maxBytes) return;
    while (this.#count > 0 && (this.#count === CACHE_ENTRIES || this.#bytes + bytes > this.maxBytes))
      this.#evictOldest();
    this.#order[(this.#oldest + this.#count) % CACHE_ENTRIES] = token;
    this.#count++;
    this.#bytes += bytes;
    this.#verified.set(token, { ...entry, bytes });
  }

  /**
   * Drops a token's entry (an expired token) and its bytes. Its ring slot stays until it is the
   * oldest: #evictOldest skips a slot whose entry is gone.
   */
  #forget(token: string): void {
    const entry = this.#verified.get(token);
    if (!entry) return;
    this.#bytes -= entry.bytes;
    this.#verified.delete(token);
  }

  #evictOldest(): void {
    const token = this.#order[this.#oldest];
    this.#order[this.#oldest] = undefined;
    this.#oldest = (this.#oldest + 1) % CACHE_ENTRIES;
    this.#count--;
    const entry = token === undefined ? undefined : this.#verified.get(token);
    if (token !== undefined && entry) {
      this.#bytes -= entry.bytes;
      this.#verified.delete(token);
    }
  }

  /**
   * Verifies an access token. `audience` is the API key id the caller expects (the API_KEY_ID
   * header of /verify); only when it is undefined is any project of this issuer accepted — any
   * string, even '' (a header sent empty), must equal `aud`. A token seen before is
   * answered synchronously when the project and revocation caches are fresh (the hot path of
   * /verify); anything else returns a promise.
   */
  verify(token: string, audience?: string): VerifyResult | Promise<VerifyResult> {
    const cached = this.#verified.get(token);
    if (cached && this.keys.get(cached.kid) && this.revocations.fresh()) {
      const project = this.projects.cached(cached.claims.aud);
      if (project !== null) return this.#check(token, cached.claims, audience, project);
    }
    return this.#verify(token, audience);
  }

  async #verify(token: string, audience: string | undefined): Promise<VerifyResult> {
    const claims = await this.authentic(token);
    if (typeof claims === 'string') return { success: false, reason: claims };
    let project = this.projects.cached(claims.aud);
    if (project === null) project = await this.projects.byApiKeyId(claims.aud);
    if (!this.revocations.fresh()) await this.revocations.refresh();
    return this.#check(token, claims, audience, project);
  }

  /** Expiry, audience, project and revocation: checked on every call, cached or not. */
  #check(
    token: string,
    claims: AccessTokenClaims,
    audience: string | undefined,
    project: Project | undefined,
  ): VerifyResult {
    const nowSeconds = this.now() / 1000;
    if (nowSeconds >= claims.exp + this.leewaySeconds) {
      this.#forget(token);
      return { success: false, reason: VerifyReasons.expired };
    }
    if (claims.iat > nowSeconds + this.leewaySeconds)
      return { success: false, reason: VerifyReasons.notYetValid };
    if (audience !== undefined && claims.aud !== audience)
      return { success: false, reason: VerifyReasons.wrongAudience };
    if (!project) return { success: false, reason: VerifyReasons.unknownProject };
    if (this.revocations.has(claims.sid)) return { success: false, reason: VerifyReasons.revoked };
    return { success: true, claims };
  }
}
