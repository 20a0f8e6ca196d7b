import { ErrorCodes } from '@tessera/core';
import { TOKEN_TTL_DEFAULTS, TOKEN_TTL_MIN } from '../../config/index.js';
import { safeEqual, sha256 } from '../../crypto/hash.js';
import { randomToken, randomUUID } from '../../crypto/random.js';
import { Channels } from '../../db/channels.js';
import type { NoticeListener } from '../../db/notifications.js';
import { badRequest, TesseraError, unauthorized } from '../../errors.js';
import { parseMessageTemplates } from '../otp/delivery/templates/validate.js';
import { EVERY_COUNTRY, parseCountryList } from '../otp/sms-countries.js';
import { parseBranding } from './branding.js';
import { type Project, type ProjectView, projectView, type ServerSettings } from './project.js';
import { CACHE_MS, isWellFormedApiKeyId, ProjectCache } from './project-cache.js';
import {
  checkRpIdHasOrigins,
  checkRpIdServesOrigins,
  defaultRpId,
  normaliseName,
  normaliseOrigin,
  normaliseRpId,
  originOf,
  shown,
} from './project-settings.js';
import { isUniqueViolation, type ProjectsRepository, type ProjectUpdate } from './projects.repository.js';

export { isWellFormedApiKeyId } from './project-cache.js';
export { normaliseOrigin } from './project-settings.js';

export interface ProjectCredentials {
  project_id: string;
  name: string;
  api_key_id: string;
  /** Shown once; only its hash is stored. */
  api_key_secret: string;
}

export interface CreateProjectInput {
  name: string;
  origins?: string[];
  rpId?: string;
  numericAuthTime?: boolean;
  /** Require the PIN on every device sign-in (TRUSTED DEVICE alone is refused). */
  deviceRequiresPin?: boolean;
  /** Countries SMS codes may go to, e.g. `US,CA` or `['US','CA']` (`*`: all); unset follows TESSERA_SMS_COUNTRIES. */
  smsCountries?: string | readonly string[];
  /** Token lifetimes in seconds, at most the server's; unset follows TESSERA_*_TTL. */
  accessTokenTtl?: number;
  idTokenTtl?: number;
  refreshTokenTtl?: number;
  /** The built-in console project (issue 33): set only by the server's console bootstrap. */
  console?: boolean;
}

/** What `update` may change; an absent member stays as it is. */
export interface ProjectChanges {
  name?: string;
  /** Replaces the whole list (not with `addOrigins` or `removeOrigins`). */
  origins?: string[];
  addOrigins?: string[];
  /** Each must be one of the project's origins. */
  removeOrigins?: string[];
  rpId?: string;
  numericAuthTime?: boolean;
  deviceRequiresPin?: boolean;
  /**
   * The project's own OTP message texts (docs/OPERATIONS.md#message-templates), checked by
   * parseMessageTemplates; null returns to the built-in texts.
   */
  messageTemplates?: unknown;
  /** The sign-in UI's branding (modules/projects/branding.ts), replacing the whole; null removes it. */
  branding?: unknown;
  /** Open Dynamic Client Registration (RFC 7591) at the project's registration endpoint. */
  openRegistration?: boolean;
  /** Client ID Metadata Documents: a client may name itself by the HTTPS URL of its metadata. */
  clientIdMetadataDocuments?: boolean;
  /** Countries SMS codes may go to (`*`: all, none: SMS off); null returns to TESSERA_SMS_COUNTRIES. */
  smsCountries?: string | readonly string[] | null;
  /** Token lifetimes in seconds, at most the server's (`ServerSettings`); null returns to the server's. */
  accessTokenTtl?: number | null;
  idTokenTtl?: number | null;
  refreshTokenTtl?: number | null;
}

/** The server's settings when none are given (tests, tools): the specified defaults. */
const BUILT_IN_SERVER: ServerSettings = {
  sms_enabled: false,
  sms_countries: [EVERY_COUNTRY],
  access_token_ttl: TOKEN_TTL_DEFAULTS.access,
  id_token_ttl: TOKEN_TTL_DEFAULTS.id,
  refresh_token_ttl: TOKEN_TTL_DEFAULTS.refresh,
};

const LIFETIMES = [
  ['accessTokenTtl', 'access_token_ttl', TOKEN_TTL_MIN.access, 'TESSERA_ACCESS_TOKEN_TTL'],
  ['idTokenTtl', 'id_token_ttl', TOKEN_TTL_MIN.id, 'TESSERA_ID_TOKEN_TTL'],
  ['refreshTokenTtl', 'refresh_token_ttl', TOKEN_TTL_MIN.refresh, 'TESSERA_REFRESH_TOKEN_TTL'],
] as const;

/** A list of SMS countries as given (`US,CA` or `['US','CA']`), checked; 400 naming a wrong entry. */
function smsCountriesOf(given: string | readonly string[]): readonly string[] {
  const entries = typeof given === 'string' ? [given] : given;
  const odd = entries.find((entry) => typeof entry !== 'string' || entry.includes(','));
  if (odd !== undefined && typeof given !== 'string')
    throw badRequest(`sms countries: give one country code an entry, not ${shown(String(odd))}`);
  const parsed = parseCountryList(entries.join(','));
  if ('error' in parsed) throw badRequest(`sms countries: ${parsed.error}`);
  return parsed;
}

const projectNotFound = () =>
  new TesseraError(404, ErrorCodes.unknownApiKey, 'no project has this API key id');
const nameTaken = (name: string) =>
  new TesseraError(
    409,
    ErrorCodes.conflict,
    `a project named ${shown(name)} exists already; project names are unique`,
  );

/**
 * Integrator projects: credentials and settings. Lookups by API key id are cached for a few
 * seconds (hot paths such as /verify must not read the database per request), longer while the
 * database is unavailable.
 */
export class ProjectsService {
  readonly #cache: ProjectCache;
  #origins: { set: Set<string>; until: number } | undefined;

  constructor(
    private readonly repository: ProjectsRepository,
    private readonly now: () => number = Date.now,
    /** What projects follow where they set nothing, and the longest lifetimes they may set. */
    readonly server: ServerSettings = BUILT_IN_SERVER,
  ) {
    this.#cache = new ProjectCache(now);
  }

  /** A project as operators see it (operator API, console, CLI `--json`). */
  view(project: Project): ProjectView {
    return projectView(project, this.server);
  }

  /** The token lifetimes given (seconds), checked against the server's: 400 naming what is wrong. */
  #lifetimes(
    given: Partial<Record<(typeof LIFETIMES)[number][0], number | null>>,
  ): Partial<Pick<Project, 'access_token_ttl' | 'id_token_ttl' | 'refresh_token_ttl'>> {
    const out: {
      -readonly [K in 'access_token_ttl' | 'id_token_ttl' | 'refresh_token_ttl']?: number | null;
    } = {};
    for (const [option, field, min, variable] of LIFETIMES) {
      const value = given[option];
      if (value === undefined) continue;
      const max = this.server[field];
      if (value !== null && (!Number.isInteger(value) || value < min || value > max))
        throw badRequest(
          `${field} must be a whole number of seconds from ${min} to ${max} (this server's ${variable} is the longest a project may set), or null for the server's`,
        );
      out[field] = value;
    }
    return out;
  }

  async create(input: CreateProjectInput): Promise<ProjectCredentials> {
    const name = normaliseName(input.name);
    const origins = [...new Set((input.origins ?? []).map(normaliseOrigin))];
    const rpId = input.rpId === undefined ? defaultRpId(origins) : normaliseRpId(input.rpId);
    checkRpIdHasOrigins(rpId, origins);
    checkRpIdServesOrigins(rpId, origins);
    const smsCountries = input.smsCountries === undefined ? null : smsCountriesOf(input.smsCountries);
    const lifetimes = this.#lifetimes(input);
    const secret = `sk_${randomToken(32)}`;
    const project: Project = {
      id: randomUUID(),
      name,
      api_key_id: `pk_${randomToken(16)}`,
      secret_hash: sha256(secret),
      origins,
      rp_id: rpId,
      numeric_auth_time: input.numericAuthTime ? 1 : 0,
      device_requires_pin: input.deviceRequiresPin ? 1 : 0,
      sms_countries: smsCountries,
      message_templates: null,
      branding: null,
      oauth_dcr: 0,
      oauth_cimd: 0,
      console: input.console ? 1 : 0,
      access_token_ttl: lifetimes.access_token_ttl ?? null,
      id_token_ttl: lifetimes.id_token_ttl ?? null,
      refresh_token_ttl: lifetimes.refresh_token_ttl ?? null,
      created_at: this.now(),
      secret_rotated_at: null,
    };
    if (await this.repository.findByName(name)) throw nameTaken(name);
    try {
      await this.repository.insert(project);
    } catch (error) {
      throw isUniqueViolation(error) ? nameTaken(name) : error;
    }
    this.#origins = undefined;
    return { project_id: project.id, name, api_key_id: project.api_key_id, api_key_secret: secret };
  }

  /**
   * Changes a project's settings; the change applies on this instance at once and on the others
   * when its notice arrives (PostgreSQL, `follow`), at the latest within CACHE_MS (their caches
   * expire). Changing the relying-party id orphans the passkeys
   * made for the old one.
   */
  async update(apiKeyId: string, changes: ProjectChanges): Promise<Project> {
    const fields = this.#validChanges(changes);
    if (fields.name !== undefined) {
      const holder = await this.repository.findByName(fields.name);
      if (holder && holder.api_key_id !== apiKeyId) throw nameTaken(fields.name);
    }
    let updated: Project | undefined;
    try {
      updated = await this.repository.update(apiKeyId, (project) => {
        const origins = nextOrigins(project.origins, fields.origins);
        const update: ProjectUpdate = {
          ...fields.settings,
          ...(origins ? { origins } : {}),
          ...(fields.name !== undefined ? { name: fields.name } : {}),
        };
        if (update.rp_id !== undefined) checkRpIdHasOrigins(update.rp_id, origins ?? project.origins);
        if (origins || update.rp_id !== undefined)
          checkRpIdServesOrigins(update.rp_id ?? project.rp_id, origins ?? project.origins);
        return update;
      });
    } catch (error) {
      throw isUniqueViolation(error) && fields.name !== undefined ? nameTaken(fields.name) : error;
    }
    if (!updated) throw projectNotFound();
    this.#forget(updated);
    return updated;
  }

  /** Checks every given change before anything is read; refuses an update that changes nothing. */
  #validChanges(changes: ProjectChanges): {
    name?: string;
    origins: { set?: string[]; add: string[]; remove: string[] };
    settings: ProjectUpdate;
  } {
    const replacing = changes.origins !== undefined;
    if (replacing && (changes.addOrigins?.length || changes.removeOrigins?.length))
      throw badRequest('give either the whole list of origins or origins to add and remove, not both');
    const settings: { -readonly [K in keyof ProjectUpdate]: ProjectUpdate[K] } = {};
    if (changes.rpId !== undefined) settings.rp_id = normaliseRpId(changes.rpId);
    if (changes.numericAuthTime !== undefined) settings.numeric_auth_time = changes.numericAuthTime ? 1 : 0;
    if (changes.deviceRequiresPin !== undefined)
      settings.device_requires_pin = changes.deviceRequiresPin ? 1 : 0;
    if (changes.messageTemplates !== undefined)
      settings.message_templates =
        changes.messageTemplates === null ? null : parseMessageTemplates(changes.messageTemplates);
    if (changes.branding !== undefined) settings.branding = parseBranding(changes.branding);
    if (changes.openRegistration !== undefined) settings.oauth_dcr = changes.openRegistration ? 1 : 0;
    if (changes.clientIdMetadataDocuments !== undefined)
      settings.oauth_cimd = changes.clientIdMetadataDocuments ? 1 : 0;
    if (changes.smsCountries !== undefined)
      settings.sms_countries = changes.smsCountries === null ? null : smsCountriesOf(changes.smsCountries);
    Object.assign(settings, this.#lifetimes(changes));
    const origins = {
      ...(replacing ? { set: unique((changes.origins ?? []).map(normaliseOrigin)) } : {}),
      add: (changes.addOrigins ?? []).map(normaliseOrigin),
      remove: (changes.removeOrigins ?? []).map(originOf),
    };
    const name = changes.name === undefined ? undefined : normaliseName(changes.name);
    const nothing =
      name === undefined &&
      !replacing &&
      origins.add.length === 0 &&
      origins.remove.length === 0 &&
      Object.keys(settings).length === 0;
    if (nothing) throw badRequest('nothing to change: give at least one setting');
    return { ...(name !== undefined ? { name } : {}), origins, settings };
  }

  /**
   * Deletes a project and everything of it (see ProjectsRepository.delete). Its API key stops
   * working, and its tokens stop verifying, on this instance at once and on the others when its
   * notice arrives (PostgreSQL), at the latest within CACHE_MS. A write an instance still accepts
   * in between fails on the schema's foreign keys and is answered 409 (toKnownError).
   */
  async delete(apiKeyId: string): Promise<{ project: Project; users: number }> {
    const project = await this.repository.findByApiKeyId(apiKeyId);
    if (!project) throw projectNotFound();
    if (project.console === 1)
      throw new TesseraError(
        409,
        ErrorCodes.conflict,
        'the console project cannot be deleted: its users are the console’s members (turn the console off with TESSERA_CONSOLE=false)',
      );
    const deleted = await this.repository.delete(project.id);
    this.#forget(project);
    if (!deleted) throw projectNotFound();
    return { project, users: deleted.users };
  }

  /** A project by API key id (404 when there is none), read from the database. */
  async get(apiKeyId: string): Promise<Project> {
    const project = await this.repository.findByApiKeyId(apiKeyId);
    if (!project) throw projectNotFound();
    return project;
  }

  /** A project by API key id or, failing that, by name (the CLI's `<project>` argument). */
  async findByRef(ref: string): Promise<Project | undefined> {
    return (await this.repository.findByApiKeyId(ref)) ?? (await this.repository.findByName(ref));
  }

  /** Drops what this instance cached about a project. */
  #forget(project: Pick<Project, 'id' | 'api_key_id'>): void {
    this.#cache.forget(project.api_key_id);
    this.#cache.forget(`id:${project.id}`);
    this.#origins = undefined;
  }

  /**
   * PostgreSQL: another instance's change or deletion of a project takes effect here as soon as it
   * commits (its API key stops working, its new origins apply), not when the cache entry expires;
   * after a lost listening connection everything cached is dropped, since notices were missed.
   */
  follow(notices: NoticeListener): void {
    notices.on(Channels.projects, (detail) => {
      const { id, api_key_id: apiKeyId } = detail;
      if (typeof id === 'string' && typeof apiKeyId === 'string') this.#forget({ id, api_key_id: apiKeyId });
      else this.#forgetAll();
    });
    notices.onListening(() => this.#forgetAll());
  }

  #forgetAll(): void {
    this.#cache.clear();
    this.#origins = undefined;
  }

  list(): Promise<Project[]> {
    return this.repository.list();
  }

  findByName(name: string): Promise<Project | undefined> {
    return this.repository.findByName(name);
  }

  /** The built-in console project (issue 33), if it was made. */
  findConsole(): Promise<Project | undefined> {
    return this.repository.findConsole();
  }

  /** Replaces the API key secret; the old one stops working at once. */
  async rotateSecret(apiKeyId: string): Promise<ProjectCredentials> {
    const project = await this.repository.findByApiKeyId(apiKeyId);
    if (!project) throw projectNotFound();
    const secret = `sk_${randomToken(32)}`;
    await this.repository.setSecretHash(project.id, sha256(secret), this.now());
    this.#forget(project);
    return { project_id: project.id, name: project.name, api_key_id: apiKeyId, api_key_secret: secret };
  }

  /**
   * The project of an API key id, from a short cache; undefined when there is none. An id of the
   * wrong shape (isWellFormedApiKeyId) is unknown without a database read.
   */
  async byApiKeyId(apiKeyId: string): Promise<Project | undefined> {
    if (!isWellFormedApiKeyId(apiKeyId)) return undefined;
    return this.#cache.read(apiKeyId, () => this.repository.findByApiKeyId(apiKeyId));
  }

  /** The project with this id, from the same short cache (refresh grants look it up by id). */
  async byId(id: string): Promise<Project | undefined> {
    return this.#cache.read(`id:${id}`, () => this.repository.findById(id));
  }

  /** How many entries each project cache holds (for tests and diagnostics): all are bounded. */
  cacheSizes(): { known: number; unknown: number; reading: number } {
    return this.#cache.sizes();
  }

  /**
   * Synchronous peek at the cache, for the /verify hot path (expired entries too, see ProjectCache):
   * the project, undefined when there is none, null when only the database can tell.
   */
  cached(apiKeyId: string): Project | undefined | null {
    if (!isWellFormedApiKeyId(apiKeyId)) return undefined;
    return this.#cache.peek(apiKeyId);
  }

  /** The project named by `API_KEY_ID`, or a 401 saying what is wrong. */
  async requireApiKeyId(apiKeyId: string | undefined): Promise<Project> {
    if (!apiKeyId) throw unauthorized('the API_KEY_ID header is required', ErrorCodes.missingApiKey);
    const project = await this.byApiKeyId(apiKeyId);
    if (!project) throw unauthorized('unknown API key id', ErrorCodes.unknownApiKey);
    return project;
  }

  /**
   * Checks `Authorization: Basic base64(api_key_id:api_key_secret)` (integrator API). The secret
   * is compared by hash in constant time; every failure reads the same.
   */
  async authenticateBasic(authorization: string | undefined): Promise<Project> {
    const failure = () =>
      unauthorized(
        'valid API key credentials (HTTP Basic: api_key_id and api_key_secret) are required',
        ErrorCodes.invalidClient,
      );
    const credentials = parseBasic(authorization);
    if (!credentials) throw failure();
    const project = isWellFormedApiKeyId(credentials.id)
      ? await this.repository.findByApiKeyId(credentials.id)
      : undefined;
    const expected = project?.secret_hash ?? sha256('no such project');
    if (!safeEqual(sha256(credentials.secret), expected) || !project) throw failure();
    return project;
  }

  /** Whether any project allows this browser origin (for CORS preflights). */
  async isKnownOrigin(origin: string): Promise<boolean> {
    const now = this.now();
    if (!this.#origins || this.#origins.until <= now) {
      this.#origins = { set: await this.repository.allOrigins(), until: now + CACHE_MS };
    }
    return this.#origins.set.has(origin);
  }
}

const unique = (values: string[]): string[] => [...new Set(values)];

/**
 * The origin list after an update, or undefined when it does not change. Removing an origin the
 * project does not have is refused (a typo would otherwise pass silently).
 */
function nextOrigins(
  current: readonly string[],
  origins: { set?: string[]; add: string[]; remove: string[] },
): string[] | undefined {
  if (origins.set) return origins.set;
  if (origins.add.length === 0 && origins.remove.length === 0) return undefined;
  const missing = origins.remove.find((o) => !current.includes(o));
  if (missing !== undefined) throw badRequest(`${shown(missing)} is not one of the project's origins`);
  return unique([...current, ...origins.add]).filter((o) => !origins.remove.includes(o));
}

/** Decodes HTTP Basic credentials (RFC 7617); the id and the secret are URL-decoded per RFC 6749 §2.3.1. */
export function parseBasic(authorization: string | undefined): { id: string; secret: string } | undefined {
  if (!authorization) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=._-]+)\s*$/i.exec(authorization);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon)),
      secret: decodeURIComponent(decoded.slice(colon + 1)),
    };
  } catch {
    return undefined;
  }
}
