import type { RequestBody, Result } from '../operation-types.js';
import { onePage, type Paginated } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';
import { Clients } from './clients.js';

/** A project (operator API). */
export type Project = Result<'getProject'>;
/** The answer to creating a project, with its `api_key_secret` (shown once). */
export type CreatedProject = Result<'createProject'>;

/**
 * Projects, for the service's operators (the operator token, or a console `operator`).
 *
 * @example
 * ```ts
 * const { api_key_id, api_key_secret } = await admin.projects.create({ name: 'shop', origins: ['https://shop.example'] });
 * ```
 */
export class Projects {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  list(options?: CallOptions): Paginated<Result<'listProjects'>['projects'][number], Result<'listProjects'>> {
    return onePage(
      () => this.#t.call('listProjects', {}, options),
      (page) => page.projects,
    );
  }

  create(project: RequestBody<'createProject'>, options?: CallOptions): Promise<CreatedProject> {
    return this.#t.call('createProject', { body: project }, options);
  }

  get(apiKeyId: string, options?: CallOptions): Promise<Project> {
    return this.#t.call('getProject', { path: { api_key_id: apiKeyId } }, options);
  }

  /** Changes the members sent (origins replaced, or added and removed one by one). */
  update(apiKeyId: string, changes: RequestBody<'updateProject'>, options?: CallOptions): Promise<Project> {
    return this.#t.call('updateProject', { path: { api_key_id: apiKeyId }, body: changes }, options);
  }

  /** Deletes the project with its users, sessions, credentials, webhooks and audit events. */
  async delete(apiKeyId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('deleteProject', { path: { api_key_id: apiKeyId } }, options);
  }

  /** A new API key secret (shown once); the old one stops working. */
  rotateSecret(apiKeyId: string, options?: CallOptions): Promise<Result<'rotateProjectSecret'>> {
    return this.#t.call('rotateProjectSecret', { path: { api_key_id: apiKeyId } }, options);
  }

  /** The project's OAuth clients, through the operator API. */
  clients(apiKeyId: string): Clients {
    return new Clients(this.#t, apiKeyId);
  }
}
