import { type AccessTokenClaims, ErrorCodes } from '@tessera/core';
import type { FastifyRequest } from 'fastify';
import type { User } from '../db/schema.js';
import { TesseraError } from '../errors.js';
import type { Project } from '../modules/projects/project.js';
import type { ProjectsService } from '../modules/projects/projects.service.js';
import type { UsersRepository } from '../modules/users/users.repository.js';
import { projectKeyOf, type VerifyService } from '../modules/verify/verify.service.js';
import { decodeJwt } from '../tokens/jwt.js';
import type { OriginRefusals } from './origin-refusal.js';
import { apiKeyIdOf } from './request-context.js';

export interface Authenticated {
  project: Project;
  user: User;
  claims: AccessTokenClaims;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in end user (set by the `bearer` hook). */
    auth: Authenticated;
  }
}

const invalidToken = (detail: string) =>
  new TesseraError(401, ErrorCodes.invalidToken, detail, {
    headers: { 'www-authenticate': `Bearer error="invalid_token", error_description="${detail}"` },
  });

/** What an endpoint accepts beyond its project's own tokens and origins (userinfo). */
export interface BearerOptions {
  /**
   * Resources (RFC 8707) a token may be bound to here: the endpoint's own identifiers. A token
   * bound to any other resource is refused (`JWT token was issued for another resource`).
   */
  resources?: readonly string[];
  /** The origins an OAuth client (the token's `client_id`) may call from besides its project's. */
  clientOrigins?: (clientId: string, project: Project) => Promise<readonly string[]>;
}

/** The resource a token claims to be bound to, when it is one of `resources` (verified after). */
function claimedResource(token: string, resources: readonly string[] | undefined): string | undefined {
  if (!resources?.length) return undefined;
  const payload = decodeJwt(token)?.payload as { aud?: unknown; api_key_id?: unknown } | undefined;
  return typeof payload?.api_key_id === 'string' &&
    typeof payload.aud === 'string' &&
    resources.includes(payload.aud)
    ? payload.aud
    : undefined;
}

/**
 * preHandler for end-user endpoints: `Authorization: Bearer <access token>`, fully verified. By
 * default only tokens of the project (`aud` its API key id), from its origins.
 */
export function requireBearer(
  verify: VerifyService,
  projects: ProjectsService,
  users: UsersRepository,
  refusals: OriginRefusals,
  options: BearerOptions = {},
) {
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+([A-Za-z0-9._-]+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new TesseraError(
        401,
        ErrorCodes.unauthorized,
        'an access token is required (Authorization: Bearer …)',
        {
          headers: { 'www-authenticate': 'Bearer realm="tessera"' },
        },
      );
    }
    const token = match[1]!;
    const result = await verify.verify(token, apiKeyIdOf(request), claimedResource(token, options.resources));
    if (!result.success) throw invalidToken(result.reason);
    const project = await projects.byApiKeyId(projectKeyOf(result.claims));
    const user = await users.findById(result.claims.sub);
    if (!project || !user || user.project_id !== project.id)
      throw invalidToken('the user of this token no longer exists');
    const origin = request.headers.origin;
    if (origin && !refusals.allowed(project, origin)) {
      const clientId = result.claims.client_id;
      const fromClient =
        typeof clientId === 'string' &&
        options.clientOrigins !== undefined &&
        (await options.clientOrigins(clientId, project)).includes(origin);
      if (!fromClient) throw refusals.problem(request.log, origin, project);
    }
    request.auth = { project, user, claims: result.claims };
  };
}
