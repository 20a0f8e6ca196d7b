import type { RequestBody, Result } from '../operation-types.js';
import { onePage, type Paginated } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';

/** OAuth client metadata (RFC 7591 names: `client_name`, `redirect_uris`, …), as registered or replaced. */
export type ClientMetadata = RequestBody<'registerClient'>;
/** A registered OAuth client; `client_secret` only in the answer that created it. */
export type OAuthClient = Result<'getClient'>;
/** The answer to a registration: the client, with `client_secret` (shown once) when confidential. */
export type RegisteredClient = Result<'registerClient'>;

/** The operation ids of a family of client routes (the integrator's, or the operator's under a project). */
const INTEGRATOR = {
  register: 'registerClient',
  list: 'listClients',
  get: 'getClient',
  replace: 'replaceClient',
  delete: 'deleteClient',
  rotateSecret: 'rotateClientSecret',
} as const;
const OPERATOR = {
  register: 'operatorRegisterClient',
  list: 'operatorListClients',
  get: 'operatorGetClient',
  replace: 'operatorReplaceClient',
  delete: 'operatorDeleteClient',
  rotateSecret: 'operatorRotateClientSecret',
} as const;

/**
 * OAuth clients of a project, in RFC 7591/7592 terms. Refusals are RFC 7591 errors: the
 * {@link TesseraAdminError}'s `code` is `invalid_redirect_uri`, `invalid_client_metadata`, ….
 *
 * @example
 * ```ts
 * const client = await admin.clients.register({ client_name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
 * console.log(client.client_id, client.client_secret); // the secret is shown this once
 * ```
 */
export class Clients {
  readonly #t: Transport;
  readonly #ops: typeof INTEGRATOR | typeof OPERATOR;
  readonly #project: Record<string, string>;

  /** The integrator's clients, or (with `apiKeyId`) a project's clients through the operator API. */
  constructor(transport: Transport, apiKeyId?: string) {
    this.#t = transport;
    this.#ops = apiKeyId === undefined ? INTEGRATOR : OPERATOR;
    this.#project = apiKeyId === undefined ? {} : { api_key_id: apiKeyId };
  }

  register(metadata: ClientMetadata, options?: CallOptions): Promise<RegisteredClient> {
    return this.#t.call(this.#ops.register, { path: this.#project, body: metadata }, options);
  }

  list(options?: CallOptions): Paginated<OAuthClient, Result<'listClients'>> {
    return onePage(
      () => this.#t.call(this.#ops.list, { path: this.#project }, options) as Promise<Result<'listClients'>>,
      (page) => page.clients,
    );
  }

  get(clientId: string, options?: CallOptions): Promise<OAuthClient> {
    return this.#t.call(this.#ops.get, { path: { ...this.#project, client_id: clientId } }, options);
  }

  /** Replaces the client's metadata with what is sent (RFC 7592): members left out take their defaults. */
  replace(clientId: string, metadata: ClientMetadata, options?: CallOptions): Promise<OAuthClient> {
    return this.#t.call(
      this.#ops.replace,
      { path: { ...this.#project, client_id: clientId }, body: metadata },
      options,
    );
  }

  /** Replaces a confidential client's secret: the new one is in the answer, once; the old one stops working at once. */
  rotateSecret(clientId: string, options?: CallOptions): Promise<RegisteredClient> {
    return this.#t.call(this.#ops.rotateSecret, { path: { ...this.#project, client_id: clientId } }, options);
  }

  /** Deletes the client: its consents and codes go, its sessions end. */
  async delete(clientId: string, options?: CallOptions): Promise<void> {
    await this.#t.call(this.#ops.delete, { path: { ...this.#project, client_id: clientId } }, options);
  }
}
