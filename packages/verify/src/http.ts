import type { TesseraVerifyError } from './errors.js';
import { createVerifier, type Verifier, type VerifierOptions } from './verifier.js';

/**
 * Options shared by the Express, Fastify and Hono middleware.
 *
 * @example
 * ```ts
 * app.use(
 *   tesseraAuth(verifier, {
 *     realm: 'orders-api',
 *     onError: (err) => log.warn({ code: err.code, cause: err.cause }),
 *   }),
 * );
 * ```
 */
export interface MiddlewareOptions {
  /** The `realm` of the `WWW-Authenticate` challenge. Default: `'tessera'`. */
  realm?: string;
  /**
   * Called with every rejection before the response is sent — the place to log. A 503's `cause`
   * holds the network or service error; it is never sent to the client.
   */
  onError?: (error: TesseraVerifyError) => void;
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
  status: 401 | 503;
  headers: Record<string, string>;
  body: { error: TesseraVerifyError['code']; error_description: string };
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

/** Validates the middleware options once, at start. */
export function resolveMiddlewareOptions(options: MiddlewareOptions = {}): Required<MiddlewareOptions> {
  const realm = options.realm ?? 'tessera';
  if (typeof realm !== 'string' || !QDTEXT.test(realm)) {
    throw new TypeError('"realm" must be printable ASCII without double quotes or backslashes');
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new TypeError('"onError" must be a function');
  }
  return { realm, onError: options.onError ?? (() => {}) };
}

/**
 * Builds the RFC 6750 answer to a failed verification: 401 with a `WWW-Authenticate: Bearer`
 * challenge (no `error` attribute when no token was sent, §3.1) or 503 when the issuer could not be
 * reached. The JSON body repeats the stable code and the public message. Use it to write an
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
export function rejection(error: TesseraVerifyError, realm: string): Rejection {
  const body = { error: error.code, error_description: error.message };
  if (error.status === 503) {
    return { status: 503, headers: { 'Cache-Control': 'no-store' }, body };
  }
  const challenge =
    error.code === 'missing_token'
      ? `Bearer realm="${realm}"`
      : `Bearer realm="${realm}", error="invalid_token", error_description="${quotable(error.message)}"`;
  return { status: 401, headers: { 'WWW-Authenticate': challenge, 'Cache-Control': 'no-store' }, body };
}

function quotable(text: string): string {
  return text.replace(/[^\t !#-[\]-~]/g, '');
}
