import type { OAuthTokenBundle } from '@tessera/core';
import { TesseraSsrError } from './errors.js';
import type { ResolvedOptions } from './options.js';

/** Who the call is made for: the browser's address, forwarded when configured. */
export interface CallContext {
  clientAddress?: string | undefined;
}

/** The JSON answer of a successful call. */
export type Json = Record<string, unknown>;

// One User-Agent for every call of this process: Tessera's refresh grace recognises "the same
// client" by address and User-Agent, so two app instances behind one address share the grace.
const USER_AGENT = 'tessera-ssr/0.1';

/** Server-to-server calls to Tessera. Errors become {@link TesseraSsrError}; secrets never reach a message. */
export class TesseraApi {
  readonly #config: ResolvedOptions;

  constructor(config: ResolvedOptions) {
    this.#config = config;
  }

  /** Calls a sign-in endpoint (`API_KEY_ID` header) or, with `bearer`, an account endpoint. */
  async call(path: string, body: Json, context: CallContext = {}, bearer?: string): Promise<Json> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'user-agent': USER_AGENT,
      api_key_id: this.#config.apiKeyId,
    };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (this.#config.forwardClientAddress && context.clientAddress)
      headers['x-forwarded-for'] = context.clientAddress;
    return this.#send(path, headers, JSON.stringify(body));
  }

  /** The refresh-token grant: a new bundle with a rotated refresh token. */
  async refresh(refreshToken: string): Promise<OAuthTokenBundle> {
    const body = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: this.#config.apiKeyId,
    });
    const answer = await this.#send(
      '/oauth/token',
      {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'user-agent': USER_AGENT,
      },
      body.toString(),
    );
    return asBundle(answer);
  }

  /** RFC 7009 revocation of the session the token belongs to. */
  async revoke(token: string): Promise<void> {
    const body = new URLSearchParams({ token, client_id: this.#config.apiKeyId });
    await this.#send(
      '/oauth/revoke',
      {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'user-agent': USER_AGENT,
      },
      body.toString(),
    );
  }

  async #send(path: string, headers: Record<string, string>, body: string): Promise<Json> {
    let response: Response;
    let text: string;
    try {
      response = await this.#config.fetch(`${this.#config.issuer}${path}`, {
        method: 'POST',
        headers,
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.#config.timeout),
      });
      text = await response.text();
    } catch (cause) {
      throw new TesseraSsrError(502, 'upstream_unavailable', 'The sign-in service could not be reached', {
        cause,
      });
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const json =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Json) : undefined;
    if (response.ok && json) return json;
    if (response.status >= 400 && response.status < 500 && json) throw upstreamError(response.status, json);
    throw new TesseraSsrError(502, 'upstream_unavailable', 'The sign-in service failed; try again', {
      cause: new Error(`Tessera answered ${response.status} on ${path}`),
    });
  }
}

/** A 4xx of Tessera, in its problem+json (`code`, `detail`) or RFC 6749 (`error`, `error_description`) form. */
function upstreamError(status: number, body: Json): TesseraSsrError {
  const code =
    typeof body.code === 'string' ? body.code : typeof body.error === 'string' ? body.error : 'bad_request';
  const detail =
    typeof body.detail === 'string'
      ? body.detail
      : typeof body.error_description === 'string'
        ? body.error_description
        : 'The sign-in service refused the request';
  return new TesseraSsrError(status, code, detail);
}

function asBundle(value: unknown): OAuthTokenBundle {
  const bundle = value as Partial<OAuthTokenBundle> | undefined;
  if (
    typeof bundle?.access_token !== 'string' ||
    typeof bundle.refresh_token !== 'string' ||
    typeof bundle.expires_in !== 'number'
  ) {
    throw new TesseraSsrError(502, 'upstream_unavailable', 'The sign-in service answered without tokens');
  }
  return bundle as OAuthTokenBundle;
}

/** The bundle of a sign-in answer made with `getOAuthToken: true`. */
export function bundleOf(answer: Json): OAuthTokenBundle {
  return asBundle(answer.oauth_token);
}
