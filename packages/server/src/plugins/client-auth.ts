import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { OAuthError, TesseraError } from '../errors.js';
import { originAllowed, type Project } from '../modules/projects/project.js';
import { type ProjectsService, parseBasic } from '../modules/projects/projects.service.js';
import type { OriginRefusals } from './origin-refusal.js';
import { apiKeyIdOf } from './request-context.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The OAuth client (a project) of an `/oauth/*` request, set by `authenticateClient`. */
    client: Project;
  }
}

/** Whether the call needs the client's secret (introspection) or may come from a public client. */
export type ClientKind = 'confidential' | 'public';

const BASIC_CHALLENGE = { 'www-authenticate': 'Basic realm="tessera"' };

/** Step 1: HTTP Basic credentials, when presented (or required), must be right. */
async function checkCredentials(
  projects: ProjectsService,
  request: FastifyRequest,
  kind: ClientKind,
): Promise<Project | undefined> {
  const authorization = request.headers.authorization;
  const presented = parseBasic(authorization) !== undefined;
  if (!presented && kind === 'public') return undefined;
  try {
    return await projects.authenticateBasic(authorization);
  } catch (error) {
    // Only a refusal of the credentials is invalid_client; a database that is away stays a 503.
    if (!(error instanceof TesseraError) || error.statusCode >= 500) throw error;
    throw new OAuthError(
      401,
      'invalid_client',
      presented
        ? 'the client credentials are not valid'
        : 'HTTP Basic credentials of the project (api_key_id:api_key_secret) are required',
      BASIC_CHALLENGE,
    );
  }
}

/** The client a public call names: `client_id` in the body, else the `API_KEY_ID` header. */
function claimedClientId(request: FastifyRequest): string | undefined {
  const fromBody = (request.body as { client_id?: unknown } | undefined)?.client_id;
  return typeof fromBody === 'string' ? fromBody : apiKeyIdOf(request);
}

/** Step 2: the named client is the one of the credentials, and exists. */
async function namedClient(
  projects: ProjectsService,
  request: FastifyRequest,
  authenticated: Project | undefined,
): Promise<Project> {
  const clientId = claimedClientId(request) ?? authenticated?.api_key_id;
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id (the API key id) is required');
  if (authenticated) {
    if (authenticated.api_key_id !== clientId) {
      throw new OAuthError(
        401,
        'invalid_client',
        'client_id and the Basic credentials name different clients',
      );
    }
    return authenticated;
  }
  const project = await projects.byApiKeyId(clientId);
  if (!project) throw new OAuthError(401, 'invalid_client', 'unknown client_id');
  return project;
}

/** Step 3: a browser's Origin must be one of the client's origins. */
function checkOrigin(request: FastifyRequest, client: Project, refusals: OriginRefusals): void {
  const origin = request.headers.origin;
  if (origin && !originAllowed(client, origin)) throw refusals.oauth(request.log, origin, client);
}

/**
 * Authenticates the client of an `/oauth/*` request (RFC 6749 §2.3): one chain for the token,
 * revocation and introspection endpoints. A confidential call is named by its Basic credentials
 * alone; a public call (apps, browsers) names its client with `client_id` or `API_KEY_ID`, may add
 * Basic credentials, and is checked against the client's origins.
 */
export async function authenticateClient(
  projects: ProjectsService,
  request: FastifyRequest,
  kind: ClientKind,
  refusals: OriginRefusals,
): Promise<Project> {
  const authenticated = await checkCredentials(projects, request, kind);
  if (kind === 'confidential') return authenticated!;
  const client = await namedClient(projects, request, authenticated);
  checkOrigin(request, client, refusals);
  return client;
}

/** preHandler setting `request.client` (after body validation, since `client_id` may be in the body). */
export function requireClient(
  projects: ProjectsService,
  kind: ClientKind,
  refusals: OriginRefusals,
): preHandlerAsyncHookHandler {
  return async (request) => {
    request.client = await authenticateClient(projects, request, kind, refusals);
  };
}
