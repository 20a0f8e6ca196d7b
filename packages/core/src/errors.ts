/**
 * Stable error codes shared by the server and the SDKs. Apps switch on these, never on messages.
 * A code, once published, keeps its meaning.
 */
export const ErrorCodes = {
  // request shape
  invalidRequest: 'invalid_request',
  payloadTooLarge: 'payload_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  // integrator credentials
  missingApiKey: 'missing_api_key',
  unknownApiKey: 'unknown_api_key',
  invalidClient: 'invalid_client',
  originNotAllowed: 'origin_not_allowed',
  // end-user authentication
  invalidIdentifier: 'invalid_identifier',
  invalidCode: 'invalid_code',
  challengeNotFound: 'challenge_not_found',
  challengeExpired: 'challenge_expired',
  challengeUsed: 'challenge_used',
  tooManyAttempts: 'too_many_attempts',
  rateLimited: 'rate_limited',
  resendTooSoon: 'resend_too_soon',
  deliveryFailed: 'delivery_failed',
  countryNotAllowed: 'country_not_allowed',
  captchaRequired: 'captcha_required',
  captchaFailed: 'captcha_failed',
  unauthorized: 'unauthorized',
  invalidToken: 'invalid_token',
  forbidden: 'forbidden',
  conflict: 'conflict',
  // trusted devices, PIN, passkeys
  invalidPublicKey: 'invalid_public_key',
  deviceAlreadyRegistered: 'device_already_registered',
  deviceNotFound: 'device_not_found',
  invalidSignature: 'invalid_signature',
  weakPin: 'weak_pin',
  invalidPin: 'invalid_pin',
  pinLocked: 'pin_locked',
  pinRequired: 'pin_required',
  pinNotSet: 'pin_not_set',
  reauthenticationRequired: 'reauthentication_required',
  passkeyVerificationFailed: 'passkey_verification_failed',
  passkeyNotFound: 'passkey_not_found',
  userVerificationRequired: 'user_verification_required',
  // integrator API
  userNotFound: 'user_not_found',
  sessionNotFound: 'session_not_found',
  reservedClaim: 'reserved_claim',
  invalidClaims: 'invalid_claims',
  claimsTooLarge: 'claims_too_large',
  // server side
  serviceUnavailable: 'service_unavailable',
  internalError: 'internal_error',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/**
 * RFC 9457 problem document as returned by every `/v1` endpoint.
 */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail?: string;
  /** Seconds to wait before trying again (rate limits, resend throttling). */
  retry_after?: number;
  /** Wrong one-time codes and PINs: how many tries remain before the lock. */
  attempts_left?: number;
}

/**
 * RFC 6749 error body of the `/oauth/*` endpoints.
 */
export interface OAuthErrorBody {
  error: string;
  error_description?: string;
}
