import { ErrorCodes } from '@tessera/core';
import type { Logger } from 'pino';
import type { ConsoleRole } from '../../db/schema.js';
import { badRequest, forbidden, notFound, TesseraError } from '../../errors.js';
import type { Project } from '../projects/project.js';
import { isUniqueViolation } from '../projects/projects.repository.js';
import type { ProjectsService } from '../projects/projects.service.js';
import type { UsersRepository } from '../users/users.repository.js';
import type { VerifyService } from '../verify/verify.service.js';
import type { ConsoleActor, ConsoleSession } from './actor.js';
import type { ConsoleMembersRepository } from './console-members.repository.js';
import { ConsoleRoster } from './console-roster.js';
import { roleAllows, strongerRole } from './permissions.js';

/** The built-in console project's name (docs/CONSOLE.md). */
export const CONSOLE_PROJECT = 'console';

const unauthorizedConsole = (detail: string) =>
  new TesseraError(401, ErrorCodes.invalidToken, detail, {
    headers: { 'www-authenticate': `Bearer realm="console", error="invalid_token"` },
  });

/** A project the member has no role in reads as one that does not exist. */
const noSuchProject = () => notFound('no project has this API key id (Tessera-Project)');

/**
 * The console's members and their sign-in (issue 33): the built-in console project, made at start,
 * whose users sign in to the console; their roles; the check of a console access token.
 */
export class ConsoleService {
  readonly #roster: ConsoleRoster;
  /**
   * The console project's ids once found: it is never deleted and its ids never change, so a token
   * is checked without a database read first (a flood of made-up tokens costs no query).
   */
  #ids: Pick<Project, 'id' | 'api_key_id'> | undefined;

  constructor(
    private readonly members: ConsoleMembersRepository,
    private readonly projects: ProjectsService,
    private readonly users: UsersRepository,
    private readonly verify: VerifyService,
    private readonly issuer: string,
    now: () => number = Date.now,
  ) {
    this.#roster = new ConsoleRoster(members, projects, now);
  }

  /** The console project, when it was made. */
  project(): Promise<Project | undefined> {
    return this.projects.findConsole();
  }

  /**
   * Makes sure the console project exists: named `console`, allowing the issuer's origin, marked as
   * the console project at creation (only then: a project renamed `console` later is not it).
   * Idempotent, and safe when instances or workers start at once: project names are unique, so
   * one creation wins and the others read it.
   */
  async ensureProject(logger?: Logger): Promise<Project> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await this.projects.findConsole();
      if (existing) return existing;
      const name = attempt === 0 ? CONSOLE_PROJECT : `${CONSOLE_PROJECT}-${attempt}`;
      const holder = await this.projects.findByName(name);
      if (holder) {
        // Another instance made it this moment (it is marked by now), or a project of an
        // integrator already has the name: then the console project gets the next free one.
        if (holder.console === 1) return holder;
        logger?.warn({ name }, 'a project is already named so; the console project takes another name');
        continue;
      }
      try {
        await this.projects.create({ name, origins: [new URL(this.issuer).origin], console: true });
      } catch (error) {
        if (!(error instanceof TesseraError && error.statusCode === 409) && !isUniqueViolation(error))
          throw error;
      }
    }
    const made = await this.projects.findConsole();
    if (!made) throw new Error('the console project could not be made');
    return made;
  }

  /**
   * Checks `Authorization: Bearer <access token>` as /verify does (signature, expiry, audience:
   * the console project, revocation), then the member's roles. 401 when it fails; 403 when the
   * console user is no member at all.
   */
  async authenticate(authorization: string | undefined): Promise<ConsoleSession> {
    const match = authorization ? /^Bearer\s+([A-Za-z0-9._-]+)\s*$/i.exec(authorization) : null;
    if (!match) throw unauthorizedConsole('a console access token is required (Authorization: Bearer …)');
    this.#ids ??= await this.projects.findConsole();
    const project = this.#ids;
    if (!project) throw unauthorizedConsole('the console is not set up');
    const result = await this.verify.verify(match[1]!, project.api_key_id);
    if (!result.success)
      throw unauthorizedConsole(`the console access token is not valid (${result.reason})`);
    const user = await this.users.findById(result.claims.sub);
    if (!user || user.project_id !== project.id)
      throw unauthorizedConsole('the user of this token no longer exists');
    const rows = await this.members.forUser(user.id, user.identifier);
    if (rows.length === 0) throw forbidden('this console user holds no console role (tessera console grant)');
    if (rows.some((row) => row.user_id === null)) await this.members.bind(user.id, user.identifier);
    const roles = new Map<string, ConsoleRole>();
    let operator = false;
    for (const row of rows) {
      if (row.role === 'operator') operator = true;
      else if (row.project_id) {
        const held = roles.get(row.project_id);
        roles.set(row.project_id, held ? strongerRole(held, row.role) : row.role);
      }
    }
    return { user, operator, roles };
  }

  /** The member's role in a project (404 when none, as for an unknown project). */
  roleIn(session: ConsoleSession, project: Pick<Project, 'id'>): ConsoleRole {
    if (session.operator) return 'operator';
    const role = session.roles.get(project.id);
    if (!role) throw noSuchProject();
    return role;
  }

  /**
   * The project named by `Tessera-Project` when the member may do `permission` there: 404 for an
   * unknown project or one they have no role in, 403 naming the permission when their role lacks it.
   */
  async access(
    session: ConsoleSession,
    apiKeyId: string | undefined,
    permission: string,
  ): Promise<{ project: Project; actor: ConsoleActor }> {
    if (!apiKeyId)
      throw badRequest('header Tessera-Project (the project’s API key id) is required with a console token');
    const project = await this.projects.byApiKeyId(apiKeyId);
    if (!project) throw noSuchProject();
    const role = this.roleIn(session, project);
    this.check(role, permission);
    return { project, actor: actorOf(session, role) };
  }

  /** 403 naming the permission when the role lacks it. */
  check(role: ConsoleRole, permission: string): void {
    if (!roleAllows(role, permission))
      throw forbidden(`this needs the permission ${permission}, which the role ${role} does not have`);
  }

  /** Members' roles: `tessera console grant | revoke | list` (ConsoleRoster). */
  get roster(): ConsoleRoster {
    return this.#roster;
  }

  grant(...args: Parameters<ConsoleRoster['grant']>) {
    return this.#roster.grant(...args);
  }
}

export function actorOf(session: ConsoleSession, role: ConsoleRole): ConsoleActor {
  return { user_id: session.user.id, identifier: session.user.identifier, role };
}
