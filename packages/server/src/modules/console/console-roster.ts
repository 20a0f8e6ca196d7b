import type { ConsoleRole } from '../../db/schema.js';
import { badRequest, notFound } from '../../errors.js';
import { normaliseIdentifier } from '../otp/identifier.js';
import type { Project } from '../projects/project.js';
import type { ProjectsService } from '../projects/projects.service.js';
import type { ConsoleMember, ConsoleMembersRepository } from './console-members.repository.js';

/**
 * Who holds which console role (issue 33), as `tessera console grant | revoke | list` sets it: an
 * identifier (normalized as OTP identifiers are, so it matches the console user who signs in with
 * it) with `operator`, or `admin` / `support` / `viewer` of a project named by name or API key id.
 */
export class ConsoleRoster {
  constructor(
    private readonly members: ConsoleMembersRepository,
    private readonly projects: ProjectsService,
    private readonly now: () => number = Date.now,
  ) {}

  /** Gives `identifier` a role: `operator`, or one of a project (by name or API key id). */
  async grant(
    rawIdentifier: string,
    role: ConsoleRole,
    projectRef?: string,
  ): Promise<{ identifier: string; added: boolean; project?: Project }> {
    const identifier = normaliseIdentifier(rawIdentifier).value;
    const project = await this.#projectFor(role, projectRef);
    const added = await this.members.grant(identifier, role, project?.id ?? null, this.now());
    return { identifier, added, ...(project && { project }) };
  }

  /**
   * Takes back roles: without role or project, every role of the identifier; `operator`; or the
   * identifier's roles in a project (only `role` when given). How many were taken back.
   */
  async revoke(rawIdentifier: string, role: ConsoleRole | undefined, projectRef?: string): Promise<number> {
    const identifier = normaliseIdentifier(rawIdentifier).value;
    if (!role && !projectRef) return this.members.revokeAll(identifier);
    if (role === 'operator') {
      await this.#projectFor(role, projectRef);
      return this.members.revoke(identifier, null, 'operator');
    }
    const project = await this.#projectFor(role ?? 'viewer', projectRef);
    return this.members.revoke(identifier, project!.id, role);
  }

  list(): Promise<ConsoleMember[]> {
    return this.members.list();
  }

  async #projectFor(role: ConsoleRole, ref: string | undefined): Promise<Project | undefined> {
    if (role === 'operator') {
      if (ref) throw badRequest('operator is a role over every project: leave out --project');
      return undefined;
    }
    if (!ref)
      throw badRequest(`${role} is a role in one project: name it with --project <name-or-api_key_id>`);
    const project = await this.projects.findByRef(ref);
    if (!project) throw notFound(`no project is named or has the API key id ${ref}`);
    return project;
  }
}
