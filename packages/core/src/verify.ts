/**
 * The fixed list of reasons `POST /verify` gives with `success: false`. Callers decide by
 * `success`; the reason is for people and logs.
 */
export const VerifyReasons = {
  /** Not a JWT, not ES256, bad signature, or claims of the wrong shape. */
  invalid: 'JWT token is invalid',
  expired: 'JWT token has expired',
  notYetValid: 'JWT token is not yet valid',
  notAccessToken: 'JWT token is not an access token',
  wrongAudience: 'JWT token was issued for another API key',
  /**
   * The token is bound to a resource (RFC 8707: its `aud` is a resource server's URL) other than
   * the `resource` the caller named, or the caller named none: such a token is for that resource alone.
   */
  wrongResource: 'JWT token was issued for another resource',
  wrongIssuer: 'JWT token was issued by another issuer',
  unknownKey: 'JWT token was signed by an unknown key',
  unknownProject: 'JWT token was issued for an unknown project',
  revoked: 'JWT token has been revoked',
  // malformed requests (answered with 4xx)
  malformedRequest: 'Request body must be JSON with an oauth_token object holding a string access_token',
  tooLarge: 'Request body is too large',
  /** Answered with a 500 (an unexpected failure): retry. */
  internalError: 'An internal error occurred; the token was not checked',
  /**
   * Answered with a 503 and Retry-After: the database does not answer (beyond how long the caches
   * may be trusted without it), or the server is shutting down. Retry, on this or another instance.
   */
  unavailable: 'The service is temporarily unavailable; the token was not checked',
} as const;

export type VerifyReason = (typeof VerifyReasons)[keyof typeof VerifyReasons];

export interface VerifyResponse {
  success: boolean;
  reason?: VerifyReason;
}
