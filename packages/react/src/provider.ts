import type { TesseraClient } from '@tessera/client';
import { createContext, createElement, type ReactNode, useContext, useEffect, useState } from 'react';
import { type InitialSession, SessionStore } from './store.js';

interface TesseraContextValue {
  client: TesseraClient;
  store: SessionStore;
}

const TesseraContext = createContext<TesseraContextValue | null>(null);

/**
 * Props of {@link TesseraProvider}.
 *
 * @example
 * ```tsx
 * const props: TesseraProviderProps = { client, initialSession: null, children: <App /> };
 * ```
 */
export interface TesseraProviderProps {
  /** One `createTesseraClient(…)` for the app (create it outside components). */
  client: TesseraClient;
  /**
   * The session the server rendered with: `{ user }`, `null` (signed out), or leave it out when the
   * server cannot know (tokens in browser storage) — both sides then render `loading` first.
   * Server and first client render must get the same value, or React reports a hydration mismatch.
   */
  initialSession?: InitialSession;
  children?: ReactNode;
}

/**
 * Gives the components below it the session of `client` (`useSession`, `useUser`, `useSignIn`, `useTesseraClient`).
 *
 * @example
 * ```tsx
 * import { createTesseraClient } from '@tessera/client';
 * import { TesseraProvider } from '@tessera/react';
 *
 * const client = createTesseraClient({ issuer: 'https://auth.example.com', apiKeyId: 'pk_…' });
 * hydrateRoot(root, <TesseraProvider client={client} initialSession={window.__SESSION__}><App /></TesseraProvider>);
 * ```
 */
export function TesseraProvider({ client, initialSession, children }: TesseraProviderProps): ReactNode {
  // One store per client, created once: the server snapshot must not change between renders.
  const [store] = useState(() => new SessionStore(client, initialSession));
  useEffect(() => store.start(), [store]);
  return createElement(TesseraContext.Provider, { value: { client, store } }, children);
}

/** The provider's value; throws a clear error outside a provider. */
export function useTesseraContext(hook: string): TesseraContextValue {
  const value = useContext(TesseraContext);
  if (!value) throw new Error(`${hook}() must be used inside <TesseraProvider>`);
  return value;
}

/** The provider's value, or null outside a provider (for components that also work without one). */
export function useOptionalTesseraContext(): TesseraContextValue | null {
  return useContext(TesseraContext);
}
