import type { OAuthClient } from '../clients/client.js';
import { SUPPORTED_SCOPES } from '../clients/client.js';
import { matchRedirectUri } from '../clients/redirect-uri.js';

/** A validated authorization request (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2.1, RFC 7636, RFC 8707). */
export interface AuthorizationRequest {
  client_id: string;
  redirect_uri: string;
  response_mode: 'query' | 'form_post';
  state?: string;
  nonce?: string;
  scopes: string[];
  code_challenge: string;
  prompt: Array<'none' | 'login' | 'consent'>;
  max_age?: number;
  login_hint?: string;
  ui_locales?: string;
  resource?: string;
}

/** Raw parameters, from the query (GET) or the form (POST). Repeated parameters arrive as arrays. */
export type RawParams = Record<string, string | string[] | undefined>;

/** Shown on Tessera's own error page: the redirect URI is not trusted (RFC 6749 §4.1.2.1). */
export class UntrustedRequest extends Error {
  override name = 'UntrustedRequest';
}

/** An error the client's redirect URI receives (RFC 6749 §4.1.2.1 with RFC 9207's iss). */
export class RedirectedError extends Error {
  override name = 'RedirectedError';
  constructor(
    readonly error: string,
    description: string,
    readonly target: { redirect_uri: string; response_mode: 'query' | 'form_post'; state?: string },
  ) {
    super(description);
  }
}

const PKCE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/** A parameter's single value; RFC 6749 §3.1: a parameter sent twice is an error. */
function single(params: RawParams, name: string): string | undefined {
  const value = params[name];
  if (Array.isArray(value)) throw new TypeError(`${name} was sent more than once`);
  return value === '' ? undefined : value;
}

/**
 * Step 1, before anything may be redirected: the client and the redirect URI. An unknown client,
 * a missing or unregistered redirect URI is an `UntrustedRequest` (an error page, never a redirect).
 */
export function trustedTarget(
  params: RawParams,
  client: OAuthClient | undefined,
): { client: OAuthClient; redirect_uri: string } {
  let clientId: string | undefined;
  let redirectUri: string | undefined;
  try {
    clientId = single(params, 'client_id');
    redirectUri = single(params, 'redirect_uri');
  } catch (error) {
    throw new UntrustedRequest((error as Error).message);
  }
  if (!clientId) throw new UntrustedRequest('client_id is missing');
  if (!client) throw new UntrustedRequest('this client_id is not registered');
  if (!redirectUri) throw new UntrustedRequest('redirect_uri is missing');
  if (!matchRedirectUri(client.redirect_uris, redirectUri))
    throw new UntrustedRequest('redirect_uri is not one of the client’s registered redirect URIs');
  return { client, redirect_uri: redirectUri };
}

/** Step 2: every other parameter; errors from here are redirected to the client. */
export function checkParams(
  params: RawParams,
  client: OAuthClient,
  redirectUri: string,
): AuthorizationRequest {
  const modeRaw = Array.isArray(params.response_mode) ? undefined : params.response_mode;
  const response_mode = modeRaw === 'form_post' ? 'form_post' : 'query';
  const stateRaw = Array.isArray(params.state) ? undefined : params.state;
  const target = {
    redirect_uri: redirectUri,
    response_mode,
    ...(stateRaw ? { state: stateRaw } : {}),
  } as const;
  const fail = (error: string, description: string) => new RedirectedError(error, description, target);
  const get = (name: string) => {
    try {
      return single(params, name);
    } catch (error) {
      throw fail('invalid_request', (error as Error).message);
    }
  };
  if (modeRaw !== undefined && modeRaw !== 'query' && modeRaw !== 'form_post')
    throw fail('invalid_request', 'response_mode is query or form_post');
  if (get('request') !== undefined) throw fail('request_not_supported', 'request objects are not supported');
  if (get('request_uri') !== undefined)
    throw fail('request_uri_not_supported', 'request_uri is not supported');
  if (get('response_type') !== 'code') throw fail('unsupported_response_type', 'response_type must be code');
  const state = get('state');
  if (state !== undefined && state.length > 1000)
    throw fail('invalid_request', 'state is at most 1000 characters');
  const challenge = get('code_challenge');
  const method = get('code_challenge_method');
  if (!challenge)
    throw fail('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256');
  if (method !== 'S256')
    throw fail('invalid_request', 'code_challenge_method must be S256 (plain is refused)');
  if (!PKCE_CHALLENGE.test(challenge))
    throw fail('invalid_request', 'code_challenge is not a S256 challenge');
  const scopes = [...new Set((get('scope') ?? '').split(' ').filter(Boolean))];
  if (scopes.length === 0)
    throw fail('invalid_scope', 'scope is required (openid, profile, email, phone, offline_access)');
  const unknown = scopes.find((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
  if (unknown !== undefined) throw fail('invalid_scope', `scope ${unknown.slice(0, 40)} is not supported`);
  const refused = scopes.find((s) => !client.scopes.includes(s));
  if (refused !== undefined) throw fail('invalid_scope', `this client may not ask for ${refused}`);
  if (scopes.includes('offline_access') && !client.grant_types.includes('refresh_token'))
    throw fail('invalid_scope', 'this client may not ask for offline_access');
  const prompt = [...new Set((get('prompt') ?? '').split(' ').filter(Boolean))];
  for (const value of prompt)
    if (value !== 'none' && value !== 'login' && value !== 'consent')
      throw fail('invalid_request', 'prompt is none, login or consent');
  if (prompt.includes('none') && prompt.length > 1)
    throw fail('invalid_request', 'prompt=none cannot be combined with other values');
  const maxAgeRaw = get('max_age');
  if (maxAgeRaw !== undefined && !/^\d{1,9}$/.test(maxAgeRaw))
    throw fail('invalid_request', 'max_age is a number of seconds');
  const nonce = get('nonce');
  if (nonce !== undefined && nonce.length > 500)
    throw fail('invalid_request', 'nonce is at most 500 characters');
  const loginHint = get('login_hint');
  const uiLocales = get('ui_locales');
  const resource = get('resource');
  if (resource !== undefined && !validResource(resource))
    throw fail('invalid_target', 'resource must be an absolute URI without a fragment (RFC 8707)');
  return {
    client_id: client.client_id,
    redirect_uri: redirectUri,
    response_mode,
    ...(state !== undefined ? { state } : {}),
    ...(nonce !== undefined ? { nonce } : {}),
    scopes,
    code_challenge: challenge,
    prompt: prompt as AuthorizationRequest['prompt'],
    ...(maxAgeRaw !== undefined ? { max_age: Number(maxAgeRaw) } : {}),
    ...(loginHint !== undefined ? { login_hint: loginHint.slice(0, 320) } : {}),
    ...(uiLocales !== undefined ? { ui_locales: uiLocales.slice(0, 100) } : {}),
    ...(resource !== undefined ? { resource } : {}),
  };
}

function validResource(value: string): boolean {
  if (value.length > 2000 || value.includes('#')) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
