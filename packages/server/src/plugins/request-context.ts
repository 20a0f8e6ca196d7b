import { ErrorCodes } from '@tessera/core';
import type { FastifyRequest } from 'fastify';
import type { RateLimit } from '../config/index.js';
import type { Project } from '../db/schema.js';
import { forbidden, tooManyRequests } from '../errors.js';
import type { ProjectsService } from '../modules/projects/projects.service.js';
import type { IpLimiter } from './ip-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The integrator project named by API_KEY_ID (set by the `requireProject` hook). */
    project: Project;
  }
}

/** The API key id of a request: header `API_KEY_ID` (also accepted as `Api-Key-Id`, which proxies keep). */
export function apiKeyIdOf(request: FastifyRequest): string | undefined {
  const value = request.headers.api_key_id ?? request.headers['api-key-id'];
  return typeof value === 'string' && value.length > 0 && value.length <= 100 ? value : undefined;
}

/**
 * preHandler for app-facing endpoints: resolves the project from API_KEY_ID and, for browser
 * calls, checks the Origin against the project's allowed origins.
 */
export function requireProject(projects: ProjectsService) {
  return async (request: FastifyRequest): Promise<void> => {
    const project = await projects.requireApiKeyId(apiKeyIdOf(request));
    const origin = request.headers.origin;
    if (origin && !(JSON.parse(project.origins) as string[]).includes(origin)) {
      throw forbidden(`origin ${origin} is not allowed for this project`, ErrorCodes.originNotAllowed);
    }
    request.project = project;
  };
}

/** preHandler counting requests per client IP and route family. */
export function limitPerIp(limiter: IpLimiter, scope: string, rule: RateLimit) {
  return async (request: FastifyRequest): Promise<void> => {
    const result = limiter.hit(scope, request.ip, rule);
    if (!result.allowed)
      throw tooManyRequests('too many requests from this address; slow down', result.retryAfter);
  };
}
