import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { OAuthError } from '../../errors.js';
import { isInternalHost, publicOnlyLookup } from '../../net/address-policy.js';
import { type ClientMetadata, checkClientMetadata } from './client-metadata.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP
 * authorization specification's way for a client unknown to the server): the `client_id` is an
 * HTTPS URL, and the JSON there is the client's RFC 7591 metadata. This file fetches and checks
 * one document; `MetadataDocuments` (metadata-documents.ts) caches them.
 */

/** How a document may be fetched: the webhooks' address policy, with limits of its own. */
export interface FetchPolicy {
  /** http:// client ids are accepted (development and tests; never in production). */
  allowHttp: boolean;
  /** Loopback, private and link-local hosts may be reached (TESSERA_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** The whole fetch, connection to last byte. */
  timeoutMs: number;
  /** The largest document read; a larger one is refused. */
  maxBytes: number;
  /** How host names are resolved when private targets are refused (the system resolver by default). */
  lookup?: LookupFunction;
}

/** Production limits: 5 s, 5 KB (the draft's example of a reasonable document is far smaller). */
export const DEFAULT_LIMITS = { timeoutMs: 5000, maxBytes: 5 * 1024 } as const;

/**
 * Why a client id URL or its document cannot be used. The message is public (an error page, an
 * `invalid_client` description): it says what is wrong, never which address was reached.
 */
export class MetadataDocumentError extends Error {
  override name = 'MetadataDocumentError';
}

const MAX_URL = 2000;

/** Whether a client id is meant as a metadata document's URL (rather than a `tc_…` or an API key id). */
export const isUrlClientId = (clientId: string): boolean =>
  clientId.startsWith('https://') || clientId.startsWith('http://');

/**
 * The URL of a client id, checked as the draft asks (§3): https, a path, no fragment, no
 * user-info, no dot segments. It must be in its normal form (what `new URL` writes back): no
 * upper-case host, no default port, no `/./` — a client id is compared as a string, so two
 * spellings of one URL must not name two clients.
 */
export function clientIdUrl(clientId: string, allowHttp: boolean): URL {
  const refuse = (why: string) => new MetadataDocumentError(`client_id: ${why}`);
  if (clientId.length > MAX_URL) throw refuse(`a client id URL is at most ${MAX_URL} characters`);
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw refuse('not a URL');
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:'))
    throw refuse('a client id URL must use https');
  if (url.username || url.password) throw refuse('a client id URL has no user-info');
  if (clientId.includes('#')) throw refuse('a client id URL has no fragment');
  if (url.pathname === '/' || url.pathname === '')
    throw refuse('a client id URL has a path (https://host/path/to/client.json)');
  if (url.href !== clientId)
    throw refuse(
      'a client id URL must be written in its normal form (no dot segments, lower-case host, no default port)',
    );
  return url;
}

const DNS_FAILURES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);

/** What went wrong with a connection, in words that name no address, port or system error. */
function describe(error: unknown): string {
  const { code } = (error ?? {}) as { code?: unknown };
  if (code === 'ERR_ADDRESS_NOT_ALLOWED')
    return 'its host resolves to a loopback, private or link-local address, which Tessera does not fetch from';
  if (typeof code === 'string') {
    if (DNS_FAILURES.has(code)) return 'its host was not found';
    if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /CERT|SELF_SIGNED|UNABLE_TO/.test(code))
      return 'the TLS handshake with its host failed';
  }
  return 'it could not be fetched';
}

const isJsonType = (type: string | undefined) =>
  type !== undefined && /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type.trim());

/** What a fetch got: the parsed JSON and the answer's Cache-Control. */
export interface FetchedDocument {
  json: unknown;
  cacheControl: string | undefined;
}

/**
 * GETs a client metadata document under `policy`: the host must be public (an address literal is
 * checked here, a name by the socket's lookup when it connects, so the address checked is the one
 * connected to: no DNS rebinding); redirects are not followed; the answer must be a 200 of JSON of
 * at most `maxBytes`, arriving whole within `timeoutMs`.
 */
export function fetchDocument(url: URL, policy: FetchPolicy): Promise<FetchedDocument> {
  const fail = (why: string) =>
    new MetadataDocumentError(`the client metadata document at client_id was refused: ${why}`);
  if (!policy.allowPrivate && isInternalHost(url.hostname))
    return Promise.reject(
      fail('it is on a loopback, private or link-local address, which Tessera does not fetch from'),
    );
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error: MetadataDocumentError | undefined, document?: FetchedDocument) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      if (error) reject(error);
      else resolve(document!);
    };
    const seconds = policy.timeoutMs / 1000;
    const timer = setTimeout(() => settle(fail(`it did not arrive within ${seconds} s`)), policy.timeoutMs);
    const request = client.request(
      url,
      {
        method: 'GET',
        agent: false,
        headers: { accept: 'application/json' },
        ...(policy.allowPrivate ? {} : { lookup: policy.lookup ?? publicOnlyLookup() }),
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400)
          return settle(fail(`its host answered ${status}; redirects are not followed`));
        if (status !== 200) return settle(fail(`its host answered HTTP ${status}`));
        if (!isJsonType(response.headers['content-type']))
          return settle(fail('it is not served as application/json'));
        const declared = Number(response.headers['content-length']);
        if (declared > policy.maxBytes) return settle(fail(`it is larger than ${policy.maxBytes} bytes`));
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > policy.maxBytes) settle(fail(`it is larger than ${policy.maxBytes} bytes`));
          else chunks.push(chunk);
        });
        response.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return settle(fail('it is not valid JSON'));
          }
          const cacheControl = response.headers['cache-control'];
          settle(undefined, { json, cacheControl });
        });
        response.on('error', (error) => settle(fail(describe(error))));
      },
    );
    request.on('error', (error) => settle(fail(describe(error))));
    request.end();
  });
}

/**
 * The client's metadata from its document (draft §4): `client_id` must be the URL it was fetched
 * from; the client is public (`token_endpoint_auth_method` `none`, the default here: a document is
 * public, so it can hold no secret; `private_key_jwt` is not supported by Tessera); the other
 * members are RFC 7591's, checked as a registration's are. `client_name` defaults to the host.
 */
export function metadataOf(json: unknown, url: URL): ClientMetadata {
  const refuse = (why: string) => new MetadataDocumentError(`the client metadata document: ${why}`);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw refuse('it is not a JSON object');
  const document = json as Record<string, unknown>;
  if (document.client_id !== url.href) throw refuse('its client_id is not the URL it was fetched from');
  if (document.client_secret !== undefined || document.client_secret_expires_at !== undefined)
    throw refuse('a client metadata document holds no client_secret');
  const method = document.token_endpoint_auth_method ?? 'none';
  if (method === 'private_key_jwt')
    throw refuse(
      'token_endpoint_auth_method private_key_jwt is not supported by this server; use none (a public client with PKCE)',
    );
  if (method !== 'none')
    throw refuse(
      `token_endpoint_auth_method must be none (a public client with PKCE), not ${JSON.stringify(method).slice(0, 40)}`,
    );
  try {
    return {
      ...checkClientMetadata({
        ...document,
        client_name: document.client_name ?? url.host,
        token_endpoint_auth_method: 'none',
        first_party: undefined,
      }),
      // Whatever the document says: anyone can publish one.
      first_party: false,
    };
  } catch (error) {
    if (error instanceof OAuthError) throw refuse(error.message);
    throw error;
  }
}
