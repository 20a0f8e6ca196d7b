import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { parseBearer } from './bearer.js';
import { type AccessTokenClaims, assertAccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';
import { fromJoseError } from './jose-errors.js';
import { hasLowS } from './low-s.js';
import { createOnlineCheck, type OnlineCheck } from './revocation.js';

/**
 * Options of {@link createVerifier}.
 *
 * @example
 * ```ts
 * const options: VerifierOptions = {
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: 'pk_live_1234',
 *   clockTolerance: 10,
 *   revocation: 'online',
 * };
 * ```
 */
export interface VerifierOptions {
  /**
   * The Tessera issuer URL, exactly as it appears in the tokens' `iss` claim and without a trailing
   * slash, e.g. `https://auth.example.com`.
   */
  issuer: string;
  /** Your project's API key id; every token's `aud` must equal it (unless `resource` is given). */
  apiKeyId: string;
  /**
   * For a resource server (an MCP server, an API named by its URL): its resource identifier, e.g.
   * `https://mcp.example.com/mcp`. Tokens must then be bound to it (`aud` equal to it: the client
   * asked for it with RFC 8707's `resource`) and be of your project (`api_key_id` equal to
   * `apiKeyId`); tokens of the project's apps (`aud` the API key id) are refused. Default: none.
   */
  resource?: string;
  /** Where the signing keys are published. Default: `${issuer}/.well-known/jwks.json`. */
  jwksUri?: string;
  /** Seconds of clock skew accepted on `exp` and `nbf`. Default: 5. */
  clockTolerance?: number;
  /**
   * `'online'` also asks the issuer (`POST ${issuer}/verify`) whether the session was revoked,
   * after the local checks pass; positive answers are cached for at most one second, and an
   * unreachable service rejects the token (`verification_unavailable`). Default: `false` — tokens
   * are verified locally only and stay valid until `exp` even if the session is revoked.
   */
  revocation?: 'online' | false;
  /** Where the online revocation check is sent. Default: `${issuer}/verify`. */
  verifyUri?: string;
  /** Milliseconds before a JWKS or revocation request is abandoned. Default: 5000. */
  timeout?: number;
  /**
   * Milliseconds after a JWKS fetch during which a token with an unknown `kid` does not trigger
   * another fetch (protects the issuer from floods of forged `kid`s). Default: 30000.
   */
  jwksCooldown?: number;
  /** Milliseconds the fetched keys are trusted before they are fetched again. Default: 600000. */
  jwksCacheMaxAge?: number;
  /** The `fetch` used for the JWKS and the revocation check. Default: the global `fetch`. */
  fetch?: typeof globalThis.fetch;
  /** The clock, in milliseconds since the epoch, for `exp` checks and caches. Default: `Date.now`. */
  now?: () => number;
}

/**
 * A configured verifier of Tessera access tokens, returned by {@link createVerifier}. Create one
 * per process and share it: it holds the JWKS cache.
 *
 * @example
 * ```ts
 * const verifier: Verifier = createVerifier({ issuer, apiKeyId });
 * ```
 */
export interface Verifier {
  /**
   * Verifies an access token and returns its claims. Throws {@link TesseraVerifyError}.
   *
   * @example
   * ```ts
   * const claims = await verifier.verify(token);
   * console.log(claims.sub, claims.authentication_method);
   * ```
   */
  verify(token: string): Promise<AccessTokenClaims>;
  /**
   * Reads the token of an `Authorization: Bearer …` header value and verifies it. Throws
   * {@link TesseraVerifyError} (`missing_token` without a bearer token).
   *
   * @example
   * ```ts
   * const claims = await verifier.verifyAuthorization(request.headers.get('authorization'));
   * ```
   */
  verifyAuthorization(header: string | null | undefined): Promise<AccessTokenClaims>;
}

/**
 * Creates a verifier of Tessera access tokens. Checks: ES256 signature by a key of the issuer's
 * JWKS (fetched once, cached, re-fetched at most every `jwksCooldown` ms when a token names an
 * unknown `kid`) with a low s (the high twin (r, n − s) of a valid signature is refused), header `typ` `at+jwt`, claim `type` `access_token`, `iss` equal to `issuer`,
 * `aud` equal to `apiKeyId`, `exp` (with `clockTolerance`), `nbf` if present, and non-empty string
 * `sub`, `sid` and `jti`. Throws `TypeError` at once on invalid options.
 *
 * @example
 * ```ts
 * import { createVerifier } from '@tessera/verify';
 *
 * const verifier = createVerifier({
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: process.env.TESSERA_API_KEY_ID!,
 *   revocation: 'online',
 * });
 * const claims = await verifier.verify(token);
 * ```
 */
export function createVerifier(options: VerifierOptions): Verifier {
  const config = resolveOptions(options);
  const jwks = createRemoteJWKSet(config.jwksUri, {
    timeoutDuration: config.timeout,
    cooldownDuration: config.jwksCooldown,
    cacheMaxAge: config.jwksCacheMaxAge,
    [customFetch]: (url, init) => config.fetch(url, init),
  });
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await jwks(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys)
        throw err;
      throw new TesseraVerifyError(
        'jwks_unavailable',
        'The signing keys could not be fetched from the issuer',
        {
          cause: err,
        },
      );
    }
  };
  const online: OnlineCheck | undefined =
    config.revocation === 'online'
      ? createOnlineCheck({
          verifyUri: config.verifyUri,
          apiKeyId: config.apiKeyId,
          resource: config.resource,
          fetch: config.fetch,
          timeout: config.timeout,
          now: config.now,
        })
      : undefined;

  async function verify(token: string): Promise<AccessTokenClaims> {
    if (typeof token !== 'string' || token === '') {
      throw new TesseraVerifyError('missing_token', 'No token was given');
    }
    if (!hasLowS(token)) throw new TesseraVerifyError('invalid_token', 'The token signature is invalid');
    let payload: Awaited<ReturnType<typeof jwtVerify>>['payload'];
    try {
      ({ payload } = await jwtVerify(token, getKey, {
        algorithms: ['ES256'],
        typ: 'at+jwt',
        issuer: config.issuer,
        audience: config.resource ?? config.apiKeyId,
        clockTolerance: config.clockTolerance,
        requiredClaims: ['exp', 'iat', 'sub', 'sid', 'jti'],
        currentDate: new Date(config.now()),
      }));
    } catch (err) {
      throw fromJoseError(err);
    }
    assertAccessTokenClaims(payload);
    // Any project's client may ask for any resource URL: the token must be of this project.
    if (config.resource !== undefined && payload['api_key_id'] !== config.apiKeyId)
      throw new TesseraVerifyError('wrong_audience', 'The token was issued for another project');
    if (online) await online(token, payload.jti);
    return payload;
  }

  return {
    verify,
    verifyAuthorization: async (header) => verify(parseBearer(header)),
  };
}

type ResolvedOptions = Required<Omit<VerifierOptions, 'jwksUri' | 'verifyUri' | 'resource'>> & {
  jwksUri: URL;
  verifyUri: URL;
  resource: string | undefined;
};

// Fails fast, once, with a message that says what to fix.
function resolveOptions(options: VerifierOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('createVerifier needs an options object');
  const { issuer, apiKeyId } = options;
  if (typeof issuer !== 'string' || !URL.canParse(issuer) || !/^https?:$/.test(new URL(issuer).protocol)) {
    throw new TypeError(
      '"issuer" must be the http(s) URL of the Tessera service, e.g. https://auth.example.com',
    );
  }
  if (issuer.endsWith('/')) {
    throw new TypeError('"issuer" must not end with "/": give it exactly as in the tokens\' "iss" claim');
  }
  if (typeof apiKeyId !== 'string' || apiKeyId === '') {
    throw new TypeError('"apiKeyId" must be your project\'s API key id (a non-empty string)');
  }
  if (options.revocation !== undefined && options.revocation !== false && options.revocation !== 'online') {
    throw new TypeError('"revocation" must be \'online\' or false');
  }
  const resource = options.resource;
  if (
    resource !== undefined &&
    (typeof resource !== 'string' || !URL.canParse(resource) || resource.includes('#'))
  )
    throw new TypeError('"resource" must be the absolute URL of your resource server, without a fragment');
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw new TypeError('"fetch" must be a function');
  if (options.now !== undefined && typeof options.now !== 'function')
    throw new TypeError('"now" must be a function');
  return {
    issuer,
    apiKeyId,
    resource,
    jwksUri: url(options.jwksUri ?? `${issuer}/.well-known/jwks.json`, 'jwksUri'),
    verifyUri: url(options.verifyUri ?? `${issuer}/verify`, 'verifyUri'),
    clockTolerance: duration(options.clockTolerance, 5, 'clockTolerance'),
    revocation: options.revocation ?? false,
    timeout: Math.round(duration(options.timeout, 5000, 'timeout')),
    jwksCooldown: duration(options.jwksCooldown, 30_000, 'jwksCooldown'),
    jwksCacheMaxAge: duration(options.jwksCacheMaxAge, 600_000, 'jwksCacheMaxAge'),
    fetch: fetchImpl,
    now: options.now ?? Date.now,
  };
}

function url(value: string, name: string): URL {
  if (typeof value !== 'string' || !URL.canParse(value)) throw new TypeError(`"${name}" must be a URL`);
  return new URL(value);
}

function duration(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`"${name}" must be a non-negative number`);
  }
  return value;
}
