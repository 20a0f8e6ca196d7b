import type { RequestBody, Result } from '../operation-types.js';
import type { CallOptions, Transport } from '../transport.js';

/** The branding of the project's sign-in UI and hosted pages. */
export type Branding = Result<'getProjectBranding'>;

/**
 * The branding of the sign-in UI: display name, logo, colours (`null` clears a member).
 *
 * @example
 * ```ts
 * await admin.branding.set({ display_name: 'Shop', primary_color: '#0b5cff' });
 * ```
 */
export class BrandingResource {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  get(options?: CallOptions): Promise<Branding> {
    return this.#t.call('getProjectBranding', {}, options);
  }

  /** Replaces the branding with what is sent. */
  set(branding: RequestBody<'setProjectBranding'>, options?: CallOptions): Promise<Branding> {
    return this.#t.call('setProjectBranding', { body: branding }, options);
  }
}

/**
 * Whether anyone may register an OAuth client at the project's open registration endpoint (RFC 7591).
 *
 * @example
 * ```ts
 * await admin.clientRegistration.set({ open_registration: true });
 * ```
 */
export class ClientRegistration {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  get(options?: CallOptions): Promise<Result<'getClientRegistration'>> {
    return this.#t.call('getClientRegistration', {}, options);
  }

  set(
    setting: RequestBody<'setClientRegistration'>,
    options?: CallOptions,
  ): Promise<Result<'setClientRegistration'>> {
    return this.#t.call('setClientRegistration', { body: setting }, options);
  }
}
