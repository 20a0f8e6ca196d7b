import { type AccessTokenClaims, ErrorCodes } from '@tessera/core';
import type { FastifyRequest } from 'fastify';
import type { User } from '../db/schema.js';
import { TesseraError } from '../errors.js';
import type { Project } from '../modules/projects/project.js';
import type { ProjectsService } from '../modules/projects/projects.service.js';
import type { UsersRepository } from '../modules/users/users.repository.js';
import type { VerifyService } from '../modules/verify/verify.service.js';
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

/** preHandler for end-user endpoints: `Authorization: Bearer <access token>`, fully verified. */
export function requireBearer(
  verify: VerifyService,
  projects: ProjectsService,
  users: UsersRepository,
  refusals: OriginRefusals,
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
    const result = await verify.verify(match[1]!, apiKeyIdOf(request));
    if (!result.success) throw invalidToken(result.reason);
    const project = await projects.byApiKeyId(result.claims.aud);
    const user = await users.findById(result.claims.sub);
    if (!project || !user || user.project_id !== project.id)
      throw invalidToken('the user of this token no longer exists');
    const origin = request.headers.origin;
    if (origin && !refusals.allowed(project, origin)) throw refusals.problem(request.log, origin, project);
    request.auth = { project, user, claims: result.claims };
  };
}
