import { Lru } from '../../lru.js';
import type { ClientMetadata } from './client-metadata.js';
import {
  clientIdUrl,
  type FetchedDocument,
  type FetchPolicy,
  fetchDocument,
  MetadataDocumentError,
  metadataOf,
} from './metadata-document.js';

/** A document is kept at least this long, whatever its Cache-Control says (no-store included). */
export const MIN_CACHE_MS = 60_000;
/** And at most this long (the draft: a server should not cache a document for more than a day). */
export const MAX_CACHE_MS = 86_400_000;
/** Without Cache-Control (or max-age). */
export const DEFAULT_CACHE_MS = 300_000;
/** A refusal is remembered this long: a client id cannot make Tessera fetch a URL over and over. */
export const FAILURE_CACHE_MS = 30_000;
/** Documents (and refusals) remembered at most; the least recently used go first. */
const CAPACITY = 2_000;
/**
 * Fetches running at once, in all and to one host. Anyone may name any URL as a client id, so
 * without these a flood of new client ids (one host's endless paths, or many hosts) would keep
 * unbounded outbound requests open, each up to the policy's timeout. Past them a request is
 * refused at once, and not remembered: it may be tried again as soon as a fetch ends.
 */
export const MAX_FETCHES = 64;
export const MAX_FETCHES_PER_HOST = 4;

/**
 * How long a document may be used, from its Cache-Control: `max-age` (or `s-maxage`) within
 * [MIN_CACHE_MS, MAX_CACHE_MS]; `no-store`, `no-cache` and `max-age=0` the minimum; none the default.
 */
export function cacheLifetime(cacheControl: string | undefined): number {
  if (!cacheControl) return DEFAULT_CACHE_MS;
  const directives = cacheControl
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return MIN_CACHE_MS;
  const age = directives
    .map((d) => /^(?:s-maxage|max-age)\s*=\s*"?(\d{1,10})"?$/.exec(d)?.[1])
    .find((v) => v !== undefined);
  if (age === undefined) return DEFAULT_CACHE_MS;
  return Math.min(MAX_CACHE_MS, Math.max(MIN_CACHE_MS, Number(age) * 1000));
}

type Entry = { metadata: ClientMetadata; until: number } | { error: string; until: number };

/**
 * Client ID Metadata Documents by URL: fetched under the fetch policy, checked, and cached per
 * their Cache-Control within bounds; refusals are cached briefly too. Concurrent requests for one
 * URL share one fetch. Per instance (each instance fetches a document once per lifetime).
 */
export class MetadataDocuments {
  readonly #cache = new Lru<string, Entry>(CAPACITY);
  readonly #inFlight = new Map<string, Promise<Entry>>();
  /** Fetches running, by host. */
  readonly #perHost = new Map<string, number>();

  constructor(
    private readonly policy: FetchPolicy,
    private readonly now: () => number = Date.now,
    private readonly fetch: (url: URL, policy: FetchPolicy) => Promise<FetchedDocument> = fetchDocument,
  ) {}

  /** The metadata of the client `clientId` names; a MetadataDocumentError says why not. */
  async get(clientId: string): Promise<ClientMetadata> {
    const url = clientIdUrl(clientId, this.policy.allowHttp);
    const now = this.now();
    const cached = this.#cache.get(clientId);
    const entry = cached && cached.until > now ? cached : await this.#load(clientId, url);
    if ('error' in entry) throw new MetadataDocumentError(entry.error);
    return entry.metadata;
  }

  /** Forgets every document (tests; an operator's change of policy needs a restart anyway). */
  clear(): void {
    this.#cache.clear();
  }

  #load(clientId: string, url: URL): Promise<Entry> {
    const running = this.#inFlight.get(clientId);
    if (running) return running;
    const host = url.host;
    const toHost = this.#perHost.get(host) ?? 0;
    if (this.#inFlight.size >= MAX_FETCHES || toHost >= MAX_FETCHES_PER_HOST) {
      return Promise.resolve({
        error:
          'client_id: its metadata document cannot be fetched now (too many are being fetched); try again shortly',
        until: 0,
      });
    }
    this.#perHost.set(host, toHost + 1);
    const loading = this.fetch(url, this.policy)
      .then(
        (document): Entry => ({
          metadata: metadataOf(document.json, url),
          until: this.now() + cacheLifetime(document.cacheControl),
        }),
      )
      .catch((error: unknown): Entry => {
        if (!(error instanceof MetadataDocumentError)) throw error;
        return { error: error.message, until: this.now() + FAILURE_CACHE_MS };
      })
      .then((entry) => {
        this.#cache.set(clientId, entry);
        return entry;
      })
      .finally(() => {
        this.#inFlight.delete(clientId);
        const left = (this.#perHost.get(host) ?? 1) - 1;
        if (left > 0) this.#perHost.set(host, left);
        else this.#perHost.delete(host);
      });
    this.#inFlight.set(clientId, loading);
    return loading;
  }
}
