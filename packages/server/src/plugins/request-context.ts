import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest, onRequestAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import type { RateLimit } from '../config/index.js';
import { tooManyRequests } from '../errors.js';
import type { Project } from '../modules/projects/project.js';
import type { ProjectsService } from '../modules/projects/projects.service.js';
import { clientNetworks } from '../net/client-network.js';
import type { IpLimiter } from './ip-limiter.js';
import type { OriginRefusals } from './origin-refusal.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The integrator project named by API_KEY_ID (set by the `requireProject` hook). */
    project: Project;
  }
}

/** The authentication and per-IP hooks app-facing routes declare as `preHandler`s. */
export interface AppHooks {
  /** `API_KEY_ID` names the project (`request.project`); a browser's Origin must be one of its origins. */
  project: preHandlerAsyncHookHandler;
  /** `Authorization: Bearer <access token>` of a user of the project (`request.auth`). */
  bearer: preHandlerAsyncHookHandler;
  /**
   * Counts requests per client IP under `scope` (one scope per endpoint family). An `onRequest`
   * hook: counted before the body is read, so bodies that fail to parse or validate count too.
   */
  ipLimit(scope: string): onRequestAsyncHookHandler;
}

/**
 * The API key id of a request: header `API_KEY_ID` (also accepted as `Api-Key-Id`, which proxies
 * keep); undefined only when neither is sent. A header sent empty reads as '' and one sent twice
 * as '', ids no project has: never as absent, which would skip the audience check of /verify and
 * Bearer (issue 12). One over 100 characters is kept as sent: no project has it either (ids are
 * 1–100 characters, checked before any read), and it is answered as an unknown id, not a missing one.
 */
export function apiKeyIdOf(request: { headers: IncomingHttpHeaders }): string | undefined {
  const value = request.headers.api_key_id ?? request.headers['api-key-id'];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : '';
}

/**
 * preHandler for app-facing endpoints: resolves the project from API_KEY_ID and, for browser
 * calls, checks the Origin against the project's allowed origins.
 */
export function requireProject(projects: ProjectsService, refusals: OriginRefusals) {
  return async (request: FastifyRequest): Promise<void> => {
    const project = await projects.requireApiKeyId(apiKeyIdOf(request));
    const origin = request.headers.origin;
    if (origin && !refusals.allowed(project, origin)) throw refusals.problem(request.log, origin, project);
    request.project = project;
  };
}

/** How many /64s' worth of requests an IPv6 /56 may send (`clientNetworks`' `site`). */
const SITE_FACTOR = 4;

/**
 * onRequest hook counting requests per client network (IPv4 address, IPv6 /64) and route family; an
 * IPv6 client's /56 is counted too, under SITE_FACTOR times the limit, so that a subscriber's
 * many /64s do not each get the whole limit.
 */
export function limitPerIp(limiter: IpLimiter, scope: string, rule: RateLimit) {
  const siteRule = { ...rule, limit: rule.limit * SITE_FACTOR };
  return async (request: FastifyRequest): Promise<void> => {
    const { network: own, site } = clientNetworks(request.ip);
    const network = limiter.hit(scope, own, rule);
    if (!network.allowed)
      throw tooManyRequests('too many requests from this address; slow down', network.retryAfter);
    // Only what its /64 allowed counts against the /56: a /64 that keeps going once refused does
    // not use up its neighbours' share.
    const wide = site === undefined ? undefined : limiter.hit(scope, site, siteRule);
    if (wide && !wide.allowed)
      throw tooManyRequests('too many requests from this address; slow down', wide.retryAfter);
  };
}
