import { TesseraVerifyError } from './errors.js';

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const SCHEME = /^Bearer(?: |$)/i;

/**
 * Extracts the token from an `Authorization: Bearer <token>` header value.
 *
 * Throws {@link TesseraVerifyError} `missing_token` when the header is absent or uses another scheme
 * (e.g. `Basic`), and `invalid_token` when the scheme is Bearer but the value is not a token.
 *
 * @example
 * ```ts
 * import { parseBearer } from '@tessera/verify';
 *
 * const token = parseBearer(request.headers.get('authorization'));
 * ```
 */
export function parseBearer(header: string | null | undefined): string {
  if (typeof header !== 'string' || !SCHEME.test(header.trim())) {
    throw new TesseraVerifyError('missing_token', 'No bearer token in the Authorization header');
  }
  const match = BEARER.exec(header.trim());
  if (!match) {
    throw new TesseraVerifyError('invalid_token', 'The Authorization header does not hold a bearer token');
  }
  return match[1]!;
}
