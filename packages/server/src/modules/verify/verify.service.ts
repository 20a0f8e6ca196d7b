import { ACCESS_TOKEN_TYP, type AccessTokenClaims, type VerifyReason, VerifyReasons } from '@tessera/core';
import type { KeyStore } from '../../keys/key-store.js';
import { decodeJwt, verifyEs256 } from '../../tokens/jwt.js';
import type { Project } from '../projects/project.js';
import type { ProjectsService } from '../projects/projects.service.js';
import type { RevocationList } from './revocation-list.js';
import { VerifiedTokens } from './verified-tokens.js';

export type VerifyResult =
  | { success: true; claims: AccessTokenClaims }
  | { success: false; reason: VerifyReason };

const KEY_RELOAD_INTERVAL_MS = 10_000;

/** What the caller expects of a token: its project's API key id, the resource it is for. */
interface Expected {
  audience: string | undefined;
  resource: string | undefined;
}

/** The token's key is unknown and the keys may be read again. */
const RELOAD_KEYS = Symbol('reload keys');

/**
 * The resource a token is bound to (RFC 8707), if any: its `aud`, when it names its project apart
 * (`api_key_id`, a reserved claim no custom claim can set).
 */
const boundResource = (claims: AccessTokenClaims): string | undefined =>
  typeof claims.api_key_id === 'string' ? claims.aud : undefined;

/** The API key id of a token's project: its `api_key_id` when bound to a resource, else its `aud`. */
export const projectKeyOf = (claims: AccessTokenClaims): string =>
  typeof claims.api_key_id === 'string' ? claims.api_key_id : claims.aud;

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
 * A token's signature, header and fixed claims are checked, and from its second verification on
 * the result is cached (a valid signature stays valid; verified-tokens.ts says why not from the
 * first); expiry, audience, project existence and revocation are checked on
 * every call. Nothing here reads the database per request: projects and revocations come from
 * caches bounded in staleness.
 */
export class VerifyService {
  readonly #cache: VerifiedTokens;
  #lastKeyReload = 0;

  constructor(
    private readonly issuer: string,
    private readonly leewaySeconds: number,
    private readonly keys: KeyStore,
    private readonly projects: ProjectsService,
    private readonly revocations: RevocationList,
    private readonly now: () => number = Date.now,
    /** TESSERA_VERIFY_CACHE_MB, in bytes. */
    maxBytes = 16 * 1024 * 1024,
  ) {
    this.#cache = new VerifiedTokens(maxBytes);
  }

  /** The verified-token cache's size: entries and estimated bytes (for metrics and tests). */
  get cacheSize(): { entries: number; bytes: number } {
    return this.#cache.size;
  }

  /** Checks signature, header, type and issuer (not expiry or revocation): the claims or a reason. */
  async authentic(token: string): Promise<AccessTokenClaims | VerifyReason> {
    const result = this.#authenticNow(token);
    if (result !== RELOAD_KEYS) return result;
    this.#lastKeyReload = this.now();
    await this.keys.reload();
    const again = this.#authenticNow(token);
    return again === RELOAD_KEYS ? VerifyReasons.unknownKey : again;
  }

  /**
   * `authentic` without waiting: RELOAD_KEYS when the token's key is unknown and the keys may be
   * read again (at most once per KEY_RELOAD_INTERVAL_MS: a flood of forged `kid`s cannot turn
   * into database load).
   */
  #authenticNow(token: string): AccessTokenClaims | VerifyReason | typeof RELOAD_KEYS {
    const cached = this.#cache.get(token);
    // A key withdrawn from the JWKS (retired, or removed after a compromise) ends its tokens.
    if (cached && this.keys.get(cached.kid)) return cached.claims;
    const decoded = decodeJwt(token);
    if (decoded?.header.alg !== 'ES256' || typeof decoded.header.kid !== 'string')
      return VerifyReasons.invalid;
    const key = this.keys.get(decoded.header.kid);
    if (!key)
      return this.now() - this.#lastKeyReload > KEY_RELOAD_INTERVAL_MS
        ? RELOAD_KEYS
        : VerifyReasons.unknownKey;
    if (!verifyEs256(decoded, key.publicKey)) return VerifyReasons.invalid;
    const payload = decoded.payload;
    if (decoded.header.typ !== ACCESS_TOKEN_TYP || payload.type !== 'access_token')
      return VerifyReasons.notAccessToken;
    if (payload.iss !== this.issuer) return VerifyReasons.wrongIssuer;
    if (!shapeOk(payload)) return VerifyReasons.invalid;
    const claims = payload as AccessTokenClaims;
    // An expired token never becomes valid again: caching it would only evict a live one (its
    // holder presenting it over and over could empty the cache two requests per entry).
    if (!this.#expired(claims)) this.#cache.add(token, { claims, kid: decoded.header.kid });
    return claims;
  }

  #expired(claims: AccessTokenClaims): boolean {
    return this.now() / 1000 >= claims.exp + this.leewaySeconds;
  }

  /**
   * Verifies an access token. `audience` is the API key id the caller expects (the API_KEY_ID
   * header of /verify); only when it is undefined is any project of this issuer accepted — any
   * string, even '' (a header sent empty), must equal `aud`. `resource` is the resource server the
   * caller is (RFC 8707, `/verify`'s `resource`): a token bound to a resource is valid only when
   * the caller names that very resource (`audience` then names the token's project), and a token
   * that is not is then refused. Answered synchronously, cached or not, when the token's key is
   * known and the project and revocation caches are fresh (the steady state of /verify); a key
   * reload, a project read or a revocation refresh returns a promise.
   */
  verify(token: string, audience?: string, resource?: string): VerifyResult | Promise<VerifyResult> {
    const claims = this.#authenticNow(token);
    if (claims === RELOAD_KEYS) return this.#verify(token, audience, resource);
    if (typeof claims === 'string') return { success: false, reason: claims };
    if (this.revocations.fresh()) {
      const project = this.projects.cached(projectKeyOf(claims));
      if (project !== null) return this.#check(token, claims, { audience, resource }, project);
    }
    return this.#settle(token, claims, { audience, resource });
  }

  async #verify(
    token: string,
    audience: string | undefined,
    resource: string | undefined,
  ): Promise<VerifyResult> {
    const claims = await this.authentic(token);
    if (typeof claims === 'string') return { success: false, reason: claims };
    return this.#settle(token, claims, { audience, resource });
  }

  /** The checks of a verified token once its project is read and the revocation list is fresh. */
  async #settle(token: string, claims: AccessTokenClaims, expected: Expected): Promise<VerifyResult> {
    const key = projectKeyOf(claims);
    let project = this.projects.cached(key);
    if (project === null) project = await this.projects.byApiKeyId(key);
    await this.revocations.ready();
    return this.#check(token, claims, expected, project);
  }

  /** Expiry, audience, resource, project and revocation: checked on every call, cached or not. */
  #check(
    token: string,
    claims: AccessTokenClaims,
    { audience, resource }: Expected,
    project: Project | undefined,
  ): VerifyResult {
    if (this.#expired(claims)) {
      this.#cache.delete(token);
      return { success: false, reason: VerifyReasons.expired };
    }
    if (claims.iat > this.now() / 1000 + this.leewaySeconds)
      return { success: false, reason: VerifyReasons.notYetValid };
    const bound = boundResource(claims);
    if (resource === undefined) {
      if (audience !== undefined && claims.aud !== audience)
        return { success: false, reason: VerifyReasons.wrongAudience };
      if (bound !== undefined) return { success: false, reason: VerifyReasons.wrongResource };
    } else {
      if (bound !== resource) return { success: false, reason: VerifyReasons.wrongResource };
      if (audience !== undefined && claims.api_key_id !== audience)
        return { success: false, reason: VerifyReasons.wrongAudience };
    }
    if (!project) return { success: false, reason: VerifyReasons.unknownProject };
    if (this.revocations.has(claims.sid)) return { success: false, reason: VerifyReasons.revoked };
    return { success: true, claims };
  }
}
