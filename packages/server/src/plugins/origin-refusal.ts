import { ErrorCodes } from '@tessera/core';
import type { FastifyBaseLogger } from 'fastify';
import { forbidden, OAuthError, type TesseraError } from '../errors.js';
import { originAllowed, type Project } from '../modules/projects/project.js';

/** How often one project and origin may be warned about (a page retries on every click). */
const WARN_EVERY_MS = 60_000;
/** Pairs remembered at most; past that the memory starts afresh (a flood of made-up origins). */
const REMEMBERED = 1_000;
/** Longer Origin headers are cut in logs and answers (a browser's are short; a script's may not be). */
const ORIGIN_SHOWN = 200;

type Named = Pick<Project, 'name' | 'api_key_id'>;

/**
 * Refusals of a browser Origin a project does not list (issue 30): the answer says how to allow
 * it, and the log gets a warning naming the origin and the project, at most once a minute per
 * pair. The warning is what a developer looking at the server sees instead of a
 * bare `OPTIONS … 404`; the answer is what the SDK reports as `origin_not_allowed`.
 */
export class OriginRefusals {
  readonly #warned = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    /** The issuer's own origin: its hosted sign-in pages act for every project (issue 31). */
    readonly hostedOrigin?: string,
  ) {}

  /** Whether `origin` may call for `project`: one it lists, or the hosted pages'. */
  allowed(project: Project, origin: string): boolean {
    return originAllowed(project, origin, this.hostedOrigin);
  }

  /** `403 origin_not_allowed` (problem document), after the warning. */
  problem(log: FastifyBaseLogger, origin: string, project: Named | undefined): TesseraError {
    this.warn(log, origin, project);
    return forbidden(detail(), ErrorCodes.originNotAllowed);
  }

  /** `403 invalid_client` (RFC 6749 body, the /oauth/* format), after the warning. */
  oauth(log: FastifyBaseLogger, origin: string, project: Named | undefined): OAuthError {
    this.warn(log, origin, project);
    return new OAuthError(403, 'invalid_client', detail());
  }

  private warn(log: FastifyBaseLogger, origin: string, project: Named | undefined): void {
    const key = `${project?.api_key_id ?? ''}\n${origin}`;
    const now = this.now();
    const last = this.#warned.get(key);
    if (last !== undefined && now - last < WARN_EVERY_MS) return;
    if (this.#warned.size >= REMEMBERED) this.#warned.clear();
    this.#warned.set(key, now);
    log.warn(
      { origin: shown(origin), project: project?.name, api_key_id: project?.api_key_id },
      `browser origin not allowed: ${shown(origin)} is not one of the origins of ${
        project ? `project "${project.name}"` : 'any project'
      }; add it with: tessera projects update ${project?.name ?? '<project>'} --add-origin ${shown(origin)}`,
    );
  }
}

const shown = (origin: string) =>
  origin.length > ORIGIN_SHOWN ? `${origin.slice(0, ORIGIN_SHOWN)}…` : origin;

/**
 * The public text: what to do, without quoting the Origin (answers never quote the request; the
 * SDK adds the page's own origin, which it knows).
 */
function detail(): string {
  return "this page's Origin is not one of this project's allowed origins; allow it with: tessera projects update <project> --add-origin <origin>";
}
