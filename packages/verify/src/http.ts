import type { TesseraVerifyError } from './errors.js';
import type { ClaimRequirement } from './requirements.js';
import { createVerifier, type Verifier, type VerifierOptions } from './verifier.js';

/**
 * Options shared by the Express, Fastify and Hono middleware; `Req` is the framework's request
 * (Express `Request`, Fastify `FastifyRequest`, Hono `Context`).
 *
 * @example
 * ```ts
 * app.use(
 *   tesseraAuth(verifier, {
 *     realm: 'orders-api',
 *     optional: true,
 *     getToken: (req) => req.cookies['access_token'],
 *     requirements: [requiredScopes('orders:read')],
 *     onError: (err, req) => log.warn({ code: err.code, path: req.path, cause: err.cause }),
 *   }),
 * );
 * ```
 */
export interface MiddlewareOptions<Req = unknown> {
  /** The `realm` of the `WWW-Authenticate` challenge. Default: `'tessera'`. */
  realm?: string;
  /**
   * For a resource server: the URL of its Protected Resource Metadata (RFC 9728), sent as the
   * challenge's `resource_metadata` attribute so that a client with no configuration (an MCP
   * client) finds the authorization server — see `protectedResourceMetadataUrl`. Default: none.
   */
  resourceMetadata?: string;
  /**
   * Called with every rejection, and the request, before the answer is sent — the place to log. A
   * 503's `cause` holds the network or service error; it is never sent to the client.
   */
  onError?: (error: TesseraVerifyError, request: Req) => void;
  /**
   * `true` lets a request without a token through without claims (`req.tessera` stays undefined);
   * a token that is sent must still be valid, or the request is refused. Default: `false`.
   */
  optional?: boolean;
  /**
   * Where the token is read, instead of `Authorization: Bearer …` — e.g. a cookie. Return the
   * token, or `undefined` / `null` / `''` when the request has none. May be async.
   */
  getToken?: (request: Req) => string | null | undefined | Promise<string | null | undefined>;
  /**
   * Checks the verified claims must also pass: {@link requiredScopes}, {@link requireClaims},
   * {@link claimEquals}, {@link claimIncludes}, {@link claimCheck}. A failure answers 403.
   */
  requirements?: ClaimRequirement | readonly ClaimRequirement[];
  /**
   * Builds the answer to a rejected request, from the error, the request and the default answer
   * (see {@link rejection}); the returned `body` is sent as JSON. Default: the default answer.
   */
  errorResponse?: (error: TesseraVerifyError, request: Req, answer: Rejection) => ErrorAnswer;
  /**
   * Let CORS preflights (`OPTIONS` with `Access-Control-Request-Method`; browsers never send a
   * token with them) through without a token. Default: `true`.
   */
  skipPreflight?: boolean;
}

/**
 * What a middleware sends when a request is rejected; see {@link rejection}.
 *
 * @example
 * ```ts
 * const { status, headers, body }: Rejection = rejection(err, 'api');
 * ```
 */
export interface Rejection {
  status: 401 | 403 | 503;
  headers: Record<string, string>;
  body: { error: TesseraVerifyError['code']; error_description: string };
}

/**
 * The answer `errorResponse` returns: any 4xx or 5xx status, extra headers, a JSON body.
 *
 * @example
 * ```ts
 * const errorResponse = (err: TesseraVerifyError, _req: unknown, answer: Rejection): ErrorAnswer => ({
 *   ...answer,
 *   body: { message: 'Please sign in again', code: err.code },
 * });
 * ```
 */
export interface ErrorAnswer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** Accepts a ready verifier or the options to build one. */
export function toVerifier(verifierOrOptions: Verifier | VerifierOptions): Verifier {
  if (typeof (verifierOrOptions as Verifier).verifyAuthorization === 'function') {
    return verifierOrOptions as Verifier;
  }
  return createVerifier(verifierOrOptions as VerifierOptions);
}

// RFC 9110 §5.6.4 quoted-string, minus the quoted-pair escapes we never need.
const QDTEXT = /^[\t !#-[\]-~]*$/;

/** The middleware options, checked once at start and defaulted. */
export interface ResolvedOptions<Req> {
  realm: string;
  resourceMetadata: string | undefined;
  onError: (error: TesseraVerifyError, request: Req) => void;
  optional: boolean;
  getToken: ((request: Req) => string | null | undefined | Promise<string | null | undefined>) | undefined;
  requirements: readonly ClaimRequirement[];
  errorResponse: ((error: TesseraVerifyError, request: Req, answer: Rejection) => ErrorAnswer) | undefined;
  skipPreflight: boolean;
}

/** Validates the middleware options once, at start. */
export function resolveMiddlewareOptions<Req>(options: MiddlewareOptions<Req> = {}): ResolvedOptions<Req> {
  const realm = options.realm ?? 'tessera';
  if (typeof realm !== 'string' || !QDTEXT.test(realm)) {
    throw new TypeError('"realm" must be printable ASCII without double quotes or backslashes');
  }
  const resourceMetadata = options.resourceMetadata;
  if (
    resourceMetadata !== undefined &&
    (typeof resourceMetadata !== 'string' ||
      !URL.canParse(resourceMetadata) ||
      !QDTEXT.test(resourceMetadata))
  ) {
    throw new TypeError('"resourceMetadata" must be the URL of your protected resource metadata');
  }
  for (const name of ['onError', 'getToken', 'errorResponse'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`"${name}" must be a function`);
    }
  }
  for (const name of ['optional', 'skipPreflight'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') {
      throw new TypeError(`"${name}" must be true or false`);
    }
  }
  const requirements =
    options.requirements === undefined
      ? []
      : typeof options.requirements === 'function'
        ? [options.requirements]
        : [...options.requirements];
  if (!requirements.every((r) => typeof r === 'function')) {
    throw new TypeError(
      '"requirements" must be checks made by requiredScopes, requireClaims, claimEquals, claimIncludes or claimCheck',
    );
  }
  return {
    realm,
    resourceMetadata,
    onError: options.onError ?? (() => {}),
    optional: options.optional ?? false,
    getToken: options.getToken,
    requirements,
    errorResponse: options.errorResponse,
    skipPreflight: options.skipPreflight ?? true,
  };
}

/**
 * Builds the RFC 6750 answer to a failed verification: 401 with a `WWW-Authenticate: Bearer`
 * challenge (no `error` attribute when no token was sent, §3.1), 403 for a valid token that lacks
 * a required scope (challenge `error="insufficient_scope"` naming the scopes) or fails a claim
 * check, or 503 when the issuer could not be reached. The JSON body repeats the stable code and the public message. Use it to write an
 * adapter for another framework.
 *
 * @example
 * ```ts
 * import { createVerifier, rejection, TesseraVerifyError } from '@tessera/verify';
 *
 * try {
 *   ctx.state.tessera = await verifier.verifyAuthorization(ctx.get('authorization'));
 * } catch (err) {
 *   if (!(err instanceof TesseraVerifyError)) throw err;
 *   const { status, headers, body } = rejection(err, 'api');
 *   ctx.status = status;
 *   ctx.set(headers);
 *   ctx.body = body;
 * }
 * ```
 */
export function rejection(error: TesseraVerifyError, realm: string, resourceMetadata?: string): Rejection {
  const body = { error: error.code, error_description: error.message };
  const noStore = { 'Cache-Control': 'no-store' };
  if (error.status === 503) return { status: 503, headers: noStore, body };
  if (error.code === 'insufficient_claims') return { status: 403, headers: noStore, body };
  const description = `error_description="${quotable(error.message)}"`;
  // RFC 9728 §5.1: where a client finds the authorization server of this resource.
  const where = resourceMetadata === undefined ? '' : `, resource_metadata="${quotable(resourceMetadata)}"`;
  const challenge =
    error.code === 'missing_token'
      ? `Bearer realm="${realm}"${where}`
      : error.code === 'insufficient_scope'
        ? `Bearer realm="${realm}"${where}, error="insufficient_scope", ${description}, scope="${quotable(error.scope ?? '')}"`
        : `Bearer realm="${realm}"${where}, error="invalid_token", ${description}`;
  return { status: error.status, headers: { 'WWW-Authenticate': challenge, ...noStore }, body };
}

function quotable(text: string): string {
  return text.replace(/[^\t !#-[\]-~]/g, '');
}
