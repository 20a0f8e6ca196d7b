import { errors } from 'jose';
import { TesseraVerifyError } from './errors.js';

const CLAIM_FAILURES: Readonly<Record<string, TesseraVerifyError['code']>> = {
  iss: 'wrong_issuer',
  aud: 'wrong_audience',
};

const CLAIM_MESSAGES: Readonly<Record<string, string>> = {
  iss: 'The token was issued by another issuer',
  aud: 'The token was issued for another API key',
  typ: 'The token is not an access token',
  nbf: 'The token is not yet valid',
};

/**
 * Maps an error thrown by `jwtVerify` to a {@link TesseraVerifyError}. jose's messages are not
 * reused: ours are written for API callers, and jose's stay available as `cause`.
 */
export function fromJoseError(err: unknown): TesseraVerifyError {
  if (err instanceof TesseraVerifyError) return err;
  if (err instanceof errors.JWTExpired) {
    return new TesseraVerifyError('token_expired', 'The token has expired', { cause: err });
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') {
      return new TesseraVerifyError('invalid_token', `The token is missing the "${err.claim}" claim`, {
        cause: err,
      });
    }
    const code = CLAIM_FAILURES[err.claim] ?? 'invalid_token';
    const message = CLAIM_MESSAGES[err.claim] ?? `The token's "${err.claim}" claim is invalid`;
    return new TesseraVerifyError(code, message, { cause: err });
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return new TesseraVerifyError('invalid_token', 'The token is not signed with ES256', { cause: err });
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return new TesseraVerifyError('invalid_token', 'The token signature is invalid', { cause: err });
  }
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return new TesseraVerifyError('invalid_token', 'The token was signed by an unknown key', { cause: err });
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) {
    return new TesseraVerifyError('invalid_token', 'The token is malformed', { cause: err });
  }
  return new TesseraVerifyError('invalid_token', 'The token is invalid', { cause: err });
}
