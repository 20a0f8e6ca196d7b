/**
 * `@tessera/react` — React bindings for `@tessera/client`: `<TesseraProvider>`, `useSession()`,
 * `useUser()`, `useSignIn()`, `useTesseraClient()`, and the ready-made `<SignIn/>` (`@tessera/ui`'s
 * element) and `<UserButton/>`. Safe with server rendering: pass the session the server knows as
 * `initialSession` and the first client render matches the server's HTML.
 *
 * @packageDocumentation
 */
export {
  type PasskeyAutofillOptions,
  type PasskeyOptions,
  type SignOut,
  useSession,
  useSignIn,
  useTesseraClient,
  useUser,
} from './hooks.js';
export { TesseraProvider, type TesseraProviderProps } from './provider.js';
export { SignIn, type SignInProps } from './sign-in.js';
export type { InitialSession, SessionClient, SessionState, TesseraUser } from './store.js';
export { UserButton, type UserButtonProps } from './user-button.js';
