import {
  createTesseraClient,
  type FetchLike,
  memoryKeyStore,
  memoryStorage,
  type TesseraClient,
  type TesseraClientOptions,
} from '@tessera/client';
import { type StartOptions, startServer, type TestServer } from '../../../server/test/helpers/harness.js';

/** A clock both the server and the clients read, moved by hand. */
export function manualClock(start = Date.now()) {
  let t = start;
  return {
    now: () => t,
    advance(seconds: number) {
      t += seconds * 1000;
    },
  };
}

export interface Setup {
  server: TestServer;
  /** Paths of every call the clients made to the service, in order. */
  calls: string[];
  count(path: string): number;
  fetch: FetchLike;
  client(extra?: Partial<TesseraClientOptions>): TesseraClient;
  /** OTP sign-in through the SDK, reading the code from the development outbox. */
  signIn(client: TesseraClient, identifier: string): Promise<void>;
  close(): Promise<void>;
}

/** A real server (SQLite) and a factory of clients whose calls are counted. */
export async function setup(options: StartOptions = {}): Promise<Setup> {
  const server = await startServer('sqlite', options);
  const calls: string[] = [];
  const clients: TesseraClient[] = [];
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== new URL(server.url).origin) return globalThis.fetch(input, init);
    calls.push(url.pathname);
    const response = await globalThis.fetch(input, init);
    if (!options.now) return response;
    // Node writes the Date header from the real clock; a server on an injected clock would not.
    const headers = new Headers(response.headers);
    headers.set('date', new Date(options.now()).toUTCString());
    return new Response(await response.arrayBuffer(), { status: response.status, headers });
  };
  return {
    server,
    calls,
    count: (path) => calls.filter((p) => p === path).length,
    fetch,
    client(extra = {}) {
      const client = createTesseraClient({
        issuer: server.url,
        apiKeyId: server.project.api_key_id,
        fetch,
        storage: memoryStorage(),
        keyStore: memoryKeyStore(),
        channel: null,
        ...(options.now && { now: options.now }),
        ...extra,
      });
      clients.push(client);
      return client;
    },
    async signIn(client, identifier) {
      const { challengeId } = await client.otp.start(identifier);
      await client.otp.complete(challengeId, server.lastCode(identifier));
    },
    async close() {
      for (const client of clients) client.close();
      await server.close();
    },
  };
}

/** The code of a rejected promise's TesseraClientError (or 'resolved'). */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** Resolves at the next event the predicate accepts (by default any but `initialSession`: a change). */
export function nextEvent<T>(
  subscribe: (listener: (event: T) => void) => () => void,
  accept: (event: T) => boolean = (event) => (event as { type?: string }).type !== 'initialSession',
): Promise<T> {
  return new Promise((resolve) => {
    const stop = subscribe((event) => {
      if (!accept(event)) return;
      stop();
      resolve(event);
    });
  });
}

/**
 * Subscribes to a client's auth events; resolves once its `initialSession` has come, with the
 * array that collects the types of the events after it.
 */
export function recordEvents(client: TesseraClient): Promise<string[]> {
  const events: string[] = [];
  return new Promise((resolve) => {
    client.onAuthStateChange((event) => {
      if (event.type === 'initialSession') resolve(events);
      else events.push(event.type);
    });
  });
}
