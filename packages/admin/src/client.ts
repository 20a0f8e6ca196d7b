import type { AdminAuth } from './auth.js';
import { Audit } from './resources/audit.js';
import { Clients } from './resources/clients.js';
import { ConsoleResource, Keys, StatsResource } from './resources/operator.js';
import { BrandingResource, ClientRegistration } from './resources/project.js';
import { Projects } from './resources/projects.js';
import { ClaimsResource, Devices, Grants, Passkeys, Pin, Sessions, Users } from './resources/users.js';
import { Webhooks } from './resources/webhooks.js';
import { type RetryOptions, Transport } from './transport.js';

/**
 * Options of {@link createTesseraAdmin}: the service's URL, one credential ({@link AdminAuth}),
 * and optionally a `fetch`, the retry policy and a per-attempt timeout.
 */
export type TesseraAdminOptions = AdminAuth & {
  /** The service's base URL (`TESSERA_ISSUER`), e.g. `https://auth.example.com`. */
  issuer: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Retries of calls safe to repeat (GET, PUT, DELETE); see {@link RetryOptions}. */
  retry?: RetryOptions;
  /** Milliseconds an attempt may take, answer included (default 30 000). */
  timeout?: number;
};

/**
 * The integrator and operator APIs, resource by resource. Every method is one call of the OpenAPI
 * document (listings are {@link Paginated}); every refusal is a {@link TesseraAdminError}.
 */
export class TesseraAdmin {
  readonly #transport: Transport;
  /** Users: find, read, update, delete, sign out everywhere. */
  readonly users: Users;
  /** Custom claims of a user. */
  readonly claims: ClaimsResource;
  /** Sessions of a user. */
  readonly sessions: Sessions;
  /** Trusted devices of a user. */
  readonly devices: Devices;
  /** Passkeys of a user. */
  readonly passkeys: Passkeys;
  /** A user's PIN: set, locked, unlock. */
  readonly pin: Pin;
  /** A user's consents to third-party OAuth clients. */
  readonly grants: Grants;
  /** OAuth clients of the project (RFC 7591/7592). */
  readonly clients: Clients;
  /** Webhook endpoints and their deliveries. */
  readonly webhooks: Webhooks;
  /** The security events of the project. */
  readonly audit: Audit;
  /** The branding of the sign-in UI. */
  readonly branding: BrandingResource;
  /** Whether open OAuth client registration is on. */
  readonly clientRegistration: ClientRegistration;
  /** The project's sign-in activity per hour or day. */
  readonly stats: StatsResource;
  /** Projects (operator API). */
  readonly projects: Projects;
  /** Signing keys (operator API). */
  readonly keys: Keys;
  /** The signed-in console member (console credential only). */
  readonly console: ConsoleResource;

  /** Prefer {@link createTesseraAdmin}. */
  constructor(transport: Transport) {
    this.#transport = transport;
    this.users = new Users(transport);
    this.claims = new ClaimsResource(transport);
    this.sessions = new Sessions(transport);
    this.devices = new Devices(transport);
    this.passkeys = new Passkeys(transport);
    this.pin = new Pin(transport);
    this.grants = new Grants(transport);
    this.clients = new Clients(transport);
    this.webhooks = new Webhooks(transport);
    this.audit = new Audit(transport);
    this.branding = new BrandingResource(transport);
    this.clientRegistration = new ClientRegistration(transport);
    this.stats = new StatsResource(transport);
    this.projects = new Projects(transport);
    this.keys = new Keys(transport);
    this.console = new ConsoleResource(transport);
  }

  /**
   * The same console member acting on another project (`Tessera-Project: <api_key_id>`). Only for a
   * client made with `accessToken`: an API key belongs to one project, the operator token to none.
   *
   * @example
   * ```ts
   * const shop = admin.forProject('pk_shop');
   * await shop.users.get(userId);
   * ```
   */
  forProject(apiKeyId: string): TesseraAdmin {
    const auth = this.#transport.auth;
    if (auth.accessToken === undefined)
      throw new TypeError('@tessera/admin: forProject() needs a client made with accessToken (the console)');
    return new TesseraAdmin(this.#transport.withAuth({ accessToken: auth.accessToken, project: apiKeyId }));
  }
}

/**
 * A client of Tessera's integrator and operator APIs, for Node ≥ 20 and browsers (fetch only).
 *
 * @example
 * ```ts
 * import { createTesseraAdmin } from '@tessera/admin';
 *
 * // A project's own servers: its API key id and secret.
 * const admin = createTesseraAdmin({
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: process.env.TESSERA_API_KEY_ID!,
 *   apiKeySecret: process.env.TESSERA_API_KEY_SECRET!,
 * });
 * // The operator: { issuer, operatorToken }. The console: { issuer, accessToken: () => tessera.getAccessToken(), project }.
 * const user = await admin.users.find('ada@example.com');
 * ```
 */
export function createTesseraAdmin(options: TesseraAdminOptions): TesseraAdmin {
  const { issuer, fetch, retry, timeout, ...auth } = options;
  return new TesseraAdmin(
    new Transport({
      issuer,
      auth: auth as AdminAuth,
      ...(fetch !== undefined && { fetch }),
      ...(retry !== undefined && { retry }),
      ...(timeout !== undefined && { timeout }),
    }),
  );
}
