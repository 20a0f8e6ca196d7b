import { safeEqual, sha256 } from '../../crypto/hash.js';
import { randomToken, randomUUID } from '../../crypto/random.js';
import { OAuthError } from '../../errors.js';
import type { AuditEvent, ClientActor } from '../audit/events.js';
import type { Project } from '../projects/project.js';
import { type ClientInformation, clientInformation, type OAuthClient } from './client.js';
import {
  type ClientMetadata,
  type ClientMetadataInput,
  checkClientMetadata,
  isMetadataObject,
} from './client-metadata.js';
import type { ClientsRepository } from './clients.repository.js';
import { isUrlClientId, MetadataDocumentError } from './metadata-document.js';
import type { MetadataDocuments } from './metadata-documents.js';

/** Clients a project's integrator may register. */
export const MAX_CLIENTS_PER_PROJECT = 100;
/** Clients open registration may hold per project at once; more are refused until some expire. */
export const MAX_DYNAMIC_CLIENTS_PER_PROJECT = 1000;
/** A dynamically registered client not used for this long is deleted by housekeeping. */
export const DYNAMIC_CLIENT_IDLE_MS = 30 * 86_400_000;
/** How stale `last_used_at` may get before a use writes it again (one write a day per client). */
const TOUCH_EVERY_MS = 86_400_000;
const CLIENT_ID_PREFIX = 'tc_';
const SECRET_PREFIX = 'tcs_';

/** Whether a string has the shape of an OAuth client id (`tc_` and 22 base64url characters). */
export const isClientId = (value: string): boolean => /^tc_[A-Za-z0-9_-]{22}$/.test(value);

/** A closed or unknown project's answer to an open registration (alike: no project is revealed). */
export const registrationClosed = () =>
  new OAuthError(
    403,
    'access_denied',
    'this project does not accept dynamic client registration (the project setting open_registration is off)',
  );

const notFound = () =>
  new OAuthError(404, 'invalid_client', 'this project has no client with that client_id');

/** Where the sessions of a deleted client end (the session service, which updates revocation lists). */
export interface ClientSessions {
  revokeClientSessions(clientId: string, reason: string): Promise<unknown>;
}

/**
 * A project's OAuth clients (issue 31): registration in RFC 7591's terms, read, replace and delete
 * in RFC 7592's, and the client authentication of the token endpoint. Secrets are shown once and
 * stored as SHA-256 hashes.
 */
export class ClientsService {
  /** Clients by client_id, briefly: every authorize and token request reads its client. */
  readonly #cache = new Map<string, { client: OAuthClient | undefined; until: number }>();

  constructor(
    private readonly repository: ClientsRepository,
    private readonly sessions: ClientSessions,
    private readonly now: () => number = Date.now,
    /** Client ID Metadata Documents, for the projects that accept them. */
    private readonly documents?: MetadataDocuments,
    /** Where the clients' changes are recorded (client.created, client.deleted, …). */
    private readonly audit?: { record(event: AuditEvent): Promise<void> },
  ) {}

  async register(project: Project, input: ClientMetadataInput, by: ClientActor): Promise<ClientInformation> {
    const metadata = checkClientMetadata(input);
    if ((await this.repository.countByProject(project.id)) >= MAX_CLIENTS_PER_PROJECT)
      throw new OAuthError(
        400,
        'invalid_client_metadata',
        `a project has at most ${MAX_CLIENTS_PER_PROJECT} clients`,
      );
    const created = await this.#insert(project, metadata, false);
    await this.audit?.record({
      projectId: project.id,
      type: 'client.created',
      data: { client_id: created.client_id, by },
    });
    return created;
  }

  /**
   * Open Dynamic Client Registration (RFC 7591 §3), when the project has turned it on: anyone may
   * register, so the client is third-party (consent is always asked), `first_party` is refused,
   * and the project holds at most MAX_DYNAMIC_CLIENTS_PER_PROJECT of them. The callers' rate
   * limits are the route's.
   */
  async registerOpen(project: Project, input: ClientMetadataInput): Promise<ClientInformation> {
    if (project.oauth_dcr !== 1) throw registrationClosed();
    if (isMetadataObject(input) && input.first_party !== undefined)
      throw new OAuthError(
        400,
        'invalid_client_metadata',
        'first_party: an openly registered client is always third-party',
      );
    const metadata = checkClientMetadata(input);
    if ((await this.repository.countDynamic(project.id)) >= MAX_DYNAMIC_CLIENTS_PER_PROJECT)
      throw new OAuthError(
        429,
        'temporarily_unavailable',
        'this project has as many registered clients as it may hold; try again later',
        { 'retry-after': '3600' },
      );
    const registered = await this.#insert(project, { ...metadata, first_party: false }, true);
    await this.audit?.record({
      projectId: project.id,
      type: 'client.registered',
      data: {
        client_id: registered.client_id,
        token_endpoint_auth_method: registered.token_endpoint_auth_method,
      },
    });
    return registered;
  }

  async #insert(project: Project, metadata: ClientMetadata, dynamic: boolean): Promise<ClientInformation> {
    const secret =
      metadata.token_endpoint_auth_method === 'none' ? undefined : `${SECRET_PREFIX}${randomToken(32)}`;
    const now = this.now();
    const client: OAuthClient = {
      id: randomUUID(),
      project_id: project.id,
      client_id: `${CLIENT_ID_PREFIX}${randomToken(16)}`,
      secret_hash: secret ? sha256(secret) : null,
      token_endpoint_auth_method: metadata.token_endpoint_auth_method,
      name: metadata.name,
      logo_uri: metadata.logo_uri,
      redirect_uris: metadata.redirect_uris,
      post_logout_redirect_uris: metadata.post_logout_redirect_uris,
      grant_types: metadata.grant_types,
      scopes: metadata.scopes,
      first_party: metadata.first_party,
      dynamic,
      last_used_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.repository.insert(client);
    return clientInformation(client, secret);
  }

  async list(project: Project): Promise<ClientInformation[]> {
    return (await this.repository.listByProject(project.id)).map((c) => clientInformation(c));
  }

  async get(project: Project, clientId: string): Promise<ClientInformation> {
    return clientInformation(await this.#own(project, clientId));
  }

  /**
   * RFC 7592 §2.2: the metadata sent replaces the client's. A confidential client keeps its secret
   * unless it becomes public (the secret is dropped) or was public (a new secret is shown once).
   */
  async replace(
    project: Project,
    clientId: string,
    input: ClientMetadataInput,
    by: ClientActor,
  ): Promise<ClientInformation> {
    const current = await this.#own(project, clientId);
    // Checked before its members are read: a body of `null` or `[]` is no metadata.
    const metadata = checkClientMetadata(input);
    const sent = input as ClientMetadataInput & { client_id?: unknown };
    if (sent.client_id !== undefined && sent.client_id !== clientId)
      throw new OAuthError(400, 'invalid_client_metadata', 'client_id: must be the client being updated');
    const publicNow = metadata.token_endpoint_auth_method === 'none';
    const secret =
      !publicNow && current.secret_hash === null ? `${SECRET_PREFIX}${randomToken(32)}` : undefined;
    const client: OAuthClient = {
      ...current,
      ...metadata,
      secret_hash: publicNow ? null : secret ? sha256(secret) : current.secret_hash,
      updated_at: this.now(),
    };
    if (!(await this.repository.replace(client))) throw notFound();
    this.#cache.delete(clientId);
    await this.audit?.record({
      projectId: project.id,
      type: 'client.updated',
      data: { client_id: clientId, by },
    });
    return clientInformation(client, secret);
  }

  /**
   * A confidential client's new secret (shown once); the old one stops working at once, on every
   * instance within the client cache's few seconds. A public client has none to rotate.
   */
  async rotateSecret(project: Project, clientId: string, by: ClientActor): Promise<ClientInformation> {
    const current = await this.#own(project, clientId);
    if (current.secret_hash === null)
      throw new OAuthError(400, 'invalid_client_metadata', 'a public client has no secret to rotate');
    const secret = `${SECRET_PREFIX}${randomToken(32)}`;
    const client: OAuthClient = { ...current, secret_hash: sha256(secret), updated_at: this.now() };
    if (!(await this.repository.replace(client))) throw notFound();
    this.#cache.delete(clientId);
    await this.audit?.record({
      projectId: project.id,
      type: 'client.secret_rotated',
      data: { client_id: clientId, by },
    });
    return clientInformation(client, secret);
  }

  /** Deletes a client: its consents and codes go, its sessions (and so its tokens) end. */
  async delete(project: Project, clientId: string, by: ClientActor): Promise<void> {
    if (!(await this.repository.delete(project.id, clientId))) throw notFound();
    this.#cache.delete(clientId);
    await this.sessions.revokeClientSessions(clientId, 'client_deleted');
    await this.audit?.record({
      projectId: project.id,
      type: 'client.deleted',
      data: { client_id: clientId, by },
    });
  }

  /** The client of a client_id (any project), briefly cached; undefined when there is none. */
  async byClientId(clientId: string): Promise<OAuthClient | undefined> {
    if (!isClientId(clientId)) return undefined;
    const now = this.now();
    const hit = this.#cache.get(clientId);
    if (hit && hit.until > now) return hit.client;
    const client = await this.repository.findByClientId(clientId);
    if (client?.dynamic && now - (client.last_used_at ?? client.created_at) > TOUCH_EVERY_MS)
      await this.repository.touch(clientId, now);
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(clientId, { client, until: now + 5_000 });
    return client;
  }

  /**
   * The client a request names, at `project`'s own endpoints when `project` is given: a registered
   * client (`tc_…`, of that project), or — when the project accepts Client ID Metadata Documents —
   * the client a document URL describes (public, third-party; fetched and cached by
   * MetadataDocuments). Undefined when there is no such client; a MetadataDocumentError says why a
   * URL cannot be used.
   */
  async resolve(clientId: string, project?: Project): Promise<OAuthClient | undefined> {
    if (!isUrlClientId(clientId)) {
      const client = await this.byClientId(clientId);
      return client && (!project || client.project_id === project.id) ? client : undefined;
    }
    if (!project)
      throw new MetadataDocumentError(
        "client_id: a client id that is a URL (a Client ID Metadata Document) is accepted at the project's own endpoints, named by its authorization server metadata ({issuer}/.well-known/oauth-authorization-server/projects/{api_key_id})",
      );
    if (project.oauth_cimd !== 1 || !this.documents)
      throw new MetadataDocumentError(
        'client_id: this project does not accept Client ID Metadata Documents (the project setting client_id_metadata_documents is off)',
      );
    const metadata = await this.documents.get(clientId);
    const now = this.now();
    return {
      id: `cimd:${clientId}`,
      project_id: project.id,
      client_id: clientId,
      secret_hash: null,
      ...metadata,
      token_endpoint_auth_method: 'none',
      first_party: false,
      dynamic: false,
      last_used_at: null,
      created_at: now,
      updated_at: now,
    };
  }

  /** Housekeeping: deletes dynamically registered clients unused for DYNAMIC_CLIENT_IDLE_MS. */
  async expireUnused(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const batch = await this.repository.unusedDynamic(this.now() - DYNAMIC_CLIENT_IDLE_MS, 100);
      for (const { project_id, client_id } of batch) {
        const gone = await this.repository.delete(project_id, client_id);
        this.#cache.delete(client_id);
        await this.sessions.revokeClientSessions(client_id, 'client_expired');
        if (!gone) continue;
        deleted++;
        await this.audit?.record({
          projectId: project_id,
          type: 'client.deleted',
          data: { client_id, by: 'expired' },
        });
      }
      if (batch.length < 100) return deleted;
    }
  }

  /** Whether `secret` is the client's (constant time; a public client has none). */
  secretMatches(client: OAuthClient, secret: string): boolean {
    const expected = client.secret_hash ?? sha256('no secret');
    return safeEqual(sha256(secret), expected) && client.secret_hash !== null;
  }

  async #own(project: Project, clientId: string): Promise<OAuthClient> {
    const client = isClientId(clientId) ? await this.repository.findByClientId(clientId) : undefined;
    if (!client || client.project_id !== project.id) throw notFound();
    return client;
  }
}
