/**
 * What every framework adapter (`@tessera/verify/express`, `/fastify`, `/hono`) re-exports beside
 * its `tesseraAuth`, so an app imports from one module.
 */
export type { AccessTokenClaims } from './claims.js';
export type { ErrorAnswer, MiddlewareOptions, Rejection } from './http.js';
export {
  type ClaimRequirement,
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
