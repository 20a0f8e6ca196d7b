import { OAuthError } from '../../errors.js';
import { SUPPORTED_GRANT_TYPES, SUPPORTED_SCOPES, type TokenEndpointAuthMethod } from './client.js';
import { redirectUriProblem } from './redirect-uri.js';

/** RFC 7591 §2 client metadata as sent (unknown members are ignored, as §2 asks). */
export interface ClientMetadataInput {
  client_name?: unknown;
  redirect_uris?: unknown;
  post_logout_redirect_uris?: unknown;
  token_endpoint_auth_method?: unknown;
  grant_types?: unknown;
  response_types?: unknown;
  scope?: unknown;
  logo_uri?: unknown;
  first_party?: unknown;
}

/** Client metadata once checked: what the repository stores. */
export interface ClientMetadata {
  name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: string[];
  scopes: string[];
  logo_uri: string | null;
  first_party: boolean;
}

const MAX_URIS = 20;
const AUTH_METHODS: readonly TokenEndpointAuthMethod[] = [
  'none',
  'client_secret_basic',
  'client_secret_post',
];

/** RFC 7591 §3.2.2: the error names the field. */
const invalid = (field: string, description: string, error = 'invalid_client_metadata') =>
  new OAuthError(400, error, `${field}: ${description}`);

function stringList(field: string, value: unknown, required: boolean, error?: string): string[] {
  if (value === undefined && !required) return [];
  if (!Array.isArray(value) || (required && value.length === 0))
    throw invalid(
      field,
      required ? 'a non-empty array of strings is required' : 'must be an array of strings',
      error,
    );
  if (value.length > MAX_URIS) throw invalid(field, `at most ${MAX_URIS} entries`, error);
  for (const [index, item] of value.entries())
    if (typeof item !== 'string' || item.length === 0)
      throw invalid(`${field}[${index}]`, 'must be a non-empty string', error);
  return [...new Set(value as string[])];
}

function uris(field: string, value: unknown, required: boolean, error: string): string[] {
  const list = stringList(field, value, required, error);
  for (const [index, uri] of list.entries()) {
    const problem = redirectUriProblem(
      uri,
      field === 'redirect_uris' ? 'redirect URI' : 'post-logout redirect URI',
    );
    if (problem) throw invalid(`${field}[${index}]`, problem, error);
  }
  return list;
}

function name(value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > 100)
    throw invalid('client_name', 'a name of 1 to 100 characters is required');
  return value.trim();
}

function logoUri(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || value.length > MAX_URIS * 100)
    throw invalid('logo_uri', 'must be an https URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('logo_uri', 'must be an absolute https URL');
  }
  if (url.protocol !== 'https:' || url.username || url.password)
    throw invalid('logo_uri', 'must be an https URL without user-info');
  return value;
}

function authMethod(value: unknown): TokenEndpointAuthMethod {
  // RFC 7591 §2: client_secret_basic when omitted.
  if (value === undefined) return 'client_secret_basic';
  if (!AUTH_METHODS.includes(value as TokenEndpointAuthMethod))
    throw invalid('token_endpoint_auth_method', `one of ${AUTH_METHODS.join(', ')}`);
  return value as TokenEndpointAuthMethod;
}

function grantTypes(value: unknown): string[] {
  if (value === undefined) return ['authorization_code', 'refresh_token'];
  const list = stringList('grant_types', value, true);
  const unknown = list.find((g) => !(SUPPORTED_GRANT_TYPES as readonly string[]).includes(g));
  if (unknown !== undefined)
    throw invalid(
      'grant_types',
      `${JSON.stringify(unknown).slice(0, 60)} is not supported (authorization_code, refresh_token)`,
    );
  if (!list.includes('authorization_code')) throw invalid('grant_types', 'must include authorization_code');
  return list;
}

function responseTypes(value: unknown): void {
  if (value === undefined) return;
  const list = stringList('response_types', value, true);
  if (list.length !== 1 || list[0] !== 'code') throw invalid('response_types', 'only ["code"] is supported');
}

function scopes(value: unknown): string[] {
  if (value === undefined) return [...SUPPORTED_SCOPES];
  if (typeof value !== 'string' || value.length > 200)
    throw invalid('scope', 'a space-separated list of scopes');
  const list = [...new Set(value.split(' ').filter(Boolean))];
  const unknown = list.find((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
  if (unknown !== undefined)
    throw invalid(
      'scope',
      `${JSON.stringify(unknown).slice(0, 60)} is not one of ${SUPPORTED_SCOPES.join(' ')}`,
    );
  if (!list.includes('openid')) throw invalid('scope', 'must include openid');
  return list;
}

/** Whether a body is a JSON object (not null, an array or a scalar), as client metadata must be. */
export function isMetadataObject(input: unknown): input is ClientMetadataInput {
  return typeof input === 'object' && input !== null && !Array.isArray(input);
}

/** Checks RFC 7591 client metadata, naming the first field that is wrong (RFC 7591 §3.2.2). */
export function checkClientMetadata(input: ClientMetadataInput): ClientMetadata {
  if (!isMetadataObject(input)) throw invalid('body', 'a JSON object of client metadata is required');
  responseTypes(input.response_types);
  if (input.first_party !== undefined && typeof input.first_party !== 'boolean')
    throw invalid('first_party', 'must be true or false');
  return {
    name: name(input.client_name),
    redirect_uris: uris('redirect_uris', input.redirect_uris, true, 'invalid_redirect_uri'),
    post_logout_redirect_uris: uris(
      'post_logout_redirect_uris',
      input.post_logout_redirect_uris,
      false,
      'invalid_client_metadata',
    ),
    token_endpoint_auth_method: authMethod(input.token_endpoint_auth_method),
    grant_types: grantTypes(input.grant_types),
    scopes: scopes(input.scope),
    logo_uri: logoUri(input.logo_uri),
    first_party: input.first_party === true,
  };
}
