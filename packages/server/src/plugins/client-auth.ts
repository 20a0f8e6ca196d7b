import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { OAuthError, TesseraError } from '../errors.js';
import type { OAuthClient } from '../modules/clients/client.js';
import { type ClientsService, isClientId } from '../modules/clients/clients.service.js';
import { isUrlClientId, MetadataDocumentError } from '../modules/clients/metadata-document.js';
import { originAllowed, type Project } from '../modules/projects/project.js';
import { type ProjectsService, parseBasic } from '../modules/projects/projects.service.js';
import type { OriginRefusals } from './origin-refusal.js';
import { apiKeyIdOf } from './request-context.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The project of an `/oauth/*` request's client, set by `authenticateClient`. */
    client: Project;
    /** The registered OAuth client (issue 31) when the request names one (`tc_…`), not the API key. */
    oauthClient?: OAuthClient;
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

/** Step 3: a browser's Origin must be one of the client's origins (or the hosted pages'). */
function checkOrigin(request: FastifyRequest, client: Project, refusals: OriginRefusals): void {
  const origin = request.headers.origin;
  if (origin && !refusals.allowed(client, origin)) throw refusals.oauth(request.log, origin, client);
}

const invalidClient = (description: string) =>
  new OAuthError(401, 'invalid_client', description, BASIC_CHALLENGE);

/** Step 0: a registered OAuth client (`tc_…`), authenticated by the method it registered. */
async function registeredClient(
  clients: ClientsService,
  projects: ProjectsService,
  request: FastifyRequest,
): Promise<{ project: Project; client: OAuthClient } | undefined> {
  const basic = parseBasic(request.headers.authorization);
  const body = (request.body ?? {}) as { client_id?: unknown; client_secret?: unknown };
  const named = typeof body.client_id === 'string' ? body.client_id : undefined;
  const postSecret = typeof body.client_secret === 'string' ? body.client_secret : undefined;
  if (named !== undefined && isUrlClientId(named))
    return metadataDocumentClient(
      clients,
      projects,
      request,
      named,
      basic !== undefined || postSecret !== undefined,
    );
  const id = basic?.id ?? named;
  if (!id || !isClientId(id)) return undefined;
  if (basic && named !== undefined && named !== basic.id)
    throw invalidClient('client_id and the Basic credentials name different clients');
  const client = await clients.byClientId(id);
  if (!client) throw invalidClient('unknown client_id');
  switch (client.token_endpoint_auth_method) {
    case 'none':
      if (basic || postSecret !== undefined)
        throw invalidClient('this public client authenticates with PKCE alone, not a secret');
      break;
    case 'client_secret_basic':
      if (!basic || !clients.secretMatches(client, basic.secret))
        throw invalidClient('the client credentials are not valid (client_secret_basic)');
      break;
    case 'client_secret_post':
      if (basic || postSecret === undefined || !clients.secretMatches(client, postSecret))
        throw invalidClient('the client credentials are not valid (client_secret_post)');
      break;
  }
  const project = await projects.byId(client.project_id);
  if (!project) throw invalidClient('unknown client_id');
  const scoped = scopedApiKeyId(request);
  if (scoped !== undefined && scoped !== project.api_key_id)
    throw invalidClient("this client is not one of the project's whose endpoint this is");
  checkClientOrigin(request, project, client);
  return { project, client };
}

/** A browser's Origin must be one of the project's, or of the client's redirect URIs. */
function checkClientOrigin(request: FastifyRequest, project: Project, client: OAuthClient): void {
  const origin = request.headers.origin;
  if (
    origin &&
    !originAllowed(project, origin) &&
    !client.redirect_uris.some((uri) => originOf(uri) === origin)
  )
    throw new OAuthError(403, 'invalid_client', "the request's Origin is not one of this client's origins");
}

/** The project of an endpoint of its own (`/oauth/token/{api_key_id}`), if this is one. */
const scopedApiKeyId = (request: FastifyRequest): string | undefined =>
  (request.params as { api_key_id?: string } | undefined)?.api_key_id;

/**
 * Step 0 for a client id that is a URL (a Client ID Metadata Document): only at the endpoints of
 * a project that accepts them, a public client (no secret), its document fetched or cached.
 */
async function metadataDocumentClient(
  clients: ClientsService,
  projects: ProjectsService,
  request: FastifyRequest,
  clientId: string,
  withSecret: boolean,
): Promise<{ project: Project; client: OAuthClient }> {
  if (withSecret)
    throw invalidClient(
      'a client named by its metadata document is public: it authenticates with PKCE alone, not a secret',
    );
  const apiKeyId = scopedApiKeyId(request);
  if (apiKeyId === undefined)
    throw invalidClient(
      "a client id that is a URL (a Client ID Metadata Document) is accepted at the project's own endpoints, named by its authorization server metadata",
    );
  const project = await projects.byApiKeyId(apiKeyId);
  if (!project) throw invalidClient('no project has this API key id');
  let client: OAuthClient | undefined;
  try {
    client = await clients.resolve(clientId, project);
  } catch (error) {
    if (error instanceof MetadataDocumentError) throw invalidClient(error.message);
    throw error;
  }
  if (!client) throw invalidClient('unknown client_id');
  checkClientOrigin(request, project, client);
  return { project, client };
}

const originOf = (uri: string): string | undefined => {
  try {
    return new URL(uri).origin;
  } catch {
    return undefined;
  }
};

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
  clients?: ClientsService,
): preHandlerAsyncHookHandler {
  return async (request) => {
    const registered =
      clients && kind === 'public' ? await registeredClient(clients, projects, request) : undefined;
    if (registered) {
      request.client = registered.project;
      request.oauthClient = registered.client;
      return;
    }
    request.client = await authenticateClient(projects, request, kind, refusals);
    const scoped = scopedApiKeyId(request);
    if (scoped !== undefined && scoped !== request.client.api_key_id)
      throw invalidClient("this client is not the project's whose endpoint this is");
  };
}
