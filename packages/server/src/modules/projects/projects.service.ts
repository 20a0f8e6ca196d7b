import { ErrorCodes } from '@tessera/core';
import { safeEqual, sha256 } from '../../crypto/hash.js';
import { randomToken, randomUUID } from '../../crypto/random.js';
import type { Project } from '../../db/schema.js';
import { badRequest, TesseraError, unauthorized } from '../../errors.js';
import type { ProjectsRepository } from './projects.repository.js';

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
}

/**
 * The origin a native Android app reports in WebAuthn client data: the base64url SHA-256 of the
 * app's signing certificate. Passkeys made in the app are checked against it.
 */
const ANDROID_ORIGIN = /^android:apk-key-hash:[A-Za-z0-9_-]{43}$/;

/**
 * Normalises an allowed origin: a web origin (`scheme://host[:port]`; paths and wildcards are
 * refused) or an Android app origin (`android:apk-key-hash:<base64url sha256>`, kept as given).
 */
export function normaliseOrigin(raw: string): string {
  if (ANDROID_ORIGIN.test(raw)) return raw;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest(`"${raw}" is not an origin like https://app.example.com`);
  }
  if (
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.pathname.length > 1 ||
    url.search ||
    url.hash
  ) {
    throw badRequest(`"${raw}" is not an origin like https://app.example.com (scheme, host and port only)`);
  }
  return url.origin;
}

const CACHE_MS = 5_000;

/**
 * Integrator projects: credentials and settings. Lookups by API key id are cached for a few
 * seconds (hot paths such as /verify must not read the database per request).
 */
export class ProjectsService {
  #cache = new Map<string, { project: Project | undefined; until: number }>();
  #origins: { set: Set<string>; until: number } | undefined;

  constructor(
    private readonly repository: ProjectsRepository,
    private readonly now: () => number = Date.now,
  ) {}

  async create(input: CreateProjectInput): Promise<ProjectCredentials> {
    const name = input.name.trim();
    if (!name || name.length > 100) throw badRequest('a project name of 1 to 100 characters is required');
    const origins = [...new Set((input.origins ?? []).map(normaliseOrigin))];
    const web = origins.find((o) => !ANDROID_ORIGIN.test(o));
    const rpId = input.rpId ?? (web ? new URL(web).hostname : null);
    const secret = `sk_${randomToken(32)}`;
    const project = {
      id: randomUUID(),
      name,
      api_key_id: `pk_${randomToken(16)}`,
      secret_hash: sha256(secret),
      origins: JSON.stringify(origins),
      rp_id: rpId,
      numeric_auth_time: input.numericAuthTime ? 1 : 0,
      created_at: this.now(),
      secret_rotated_at: null,
    };
    await this.repository.insert(project);
    this.#origins = undefined;
    return { project_id: project.id, name, api_key_id: project.api_key_id, api_key_secret: secret };
  }

  list(): Promise<Project[]> {
    return this.repository.list();
  }

  findByName(name: string): Promise<Project | undefined> {
    return this.repository.findByName(name);
  }

  /** Replaces the API key secret; the old one stops working at once. */
  async rotateSecret(apiKeyId: string): Promise<ProjectCredentials> {
    const project = await this.repository.findByApiKeyId(apiKeyId);
    if (!project) throw new TesseraError(404, ErrorCodes.unknownApiKey, 'no project has this API key id');
    const secret = `sk_${randomToken(32)}`;
    await this.repository.setSecretHash(project.id, sha256(secret), this.now());
    this.#cache.delete(apiKeyId);
    this.#cache.delete(`id:${project.id}`);
    return { project_id: project.id, name: project.name, api_key_id: apiKeyId, api_key_secret: secret };
  }

  /** The project of an API key id, from a short cache; undefined when there is none. */
  async byApiKeyId(apiKeyId: string): Promise<Project | undefined> {
    const hit = this.#cache.get(apiKeyId);
    const now = this.now();
    if (hit && hit.until > now) return hit.project;
    const project = await this.repository.findByApiKeyId(apiKeyId);
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(apiKeyId, { project, until: now + CACHE_MS });
    return project;
  }

  /** The project with this id, from the same short cache (refresh grants look it up by id). */
  async byId(id: string): Promise<Project | undefined> {
    const key = `id:${id}`;
    const hit = this.#cache.get(key);
    const now = this.now();
    if (hit && hit.until > now) return hit.project;
    const project = await this.repository.findById(id);
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(key, { project, until: now + CACHE_MS });
    return project;
  }

  /** Synchronous peek at the cache, for the /verify hot path. */
  cached(apiKeyId: string): Project | undefined | null {
    const hit = this.#cache.get(apiKeyId);
    return hit && hit.until > this.now() ? hit.project : null;
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
    const project = await this.repository.findByApiKeyId(credentials.id);
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
