/**
 * `@tessera/react` — React bindings for `@tessera/client`: `<TesseraProvider>`, `useSession()`,
 * `useUser()`, `useSignIn()`, `useTesseraClient()`. Safe with server rendering: pass the session
 * the server knows as `initialSession` and the first client render matches the server's HTML.
 *
 * @packageDocumentation
 */
export {
  type PasskeyAutofillOptions,
  type PasskeyOptions,
  type SignIn,
  type SignOut,
  useSession,
  useSignIn,
  useTesseraClient,
  useUser,
} from './hooks.js';
export { TesseraProvider, type TesseraProviderProps } from './provider.js';
export type { InitialSession, SessionClient, SessionState, TesseraUser } from './store.js';
