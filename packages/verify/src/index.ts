/**
 * `@tessera/verify` — verifies Tessera access tokens in your backend. Framework adapters live in
 * the subpath exports `@tessera/verify/express`, `@tessera/verify/fastify` and `@tessera/verify/hono`.
 *
 * @packageDocumentation
 */
export { parseBearer } from './bearer.js';
export type { AccessTokenClaims, AuthenticationMethod } from './claims.js';
export { TesseraVerifyError, type VerifyErrorCode } from './errors.js';
export type { ErrorAnswer, MiddlewareOptions, Rejection } from './http.js';
export { rejection } from './http.js';
export {
  type ClaimRequirement,
  type ClaimValue,
  claimCheck,
  claimEquals,
  claimIncludes,
  requireClaims,
  requiredScopes,
} from './requirements.js';
export {
  type ProtectedResourceOptions,
  protectedResourceMetadata,
  protectedResourceMetadataUrl,
} from './resource.js';
export { createVerifier, type Verifier, type VerifierOptions } from './verifier.js';
