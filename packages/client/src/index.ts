export type {
  AccessTokenClaims,
  AuthMethod,
  IdTokenClaims,
  OAuthTokenBundle,
  VerifyResponse,
} from '@tessera/core';
export { ErrorCodes } from '@tessera/core';
export {
  createTesseraClient,
  type TesseraClient,
  type TesseraClientOptions,
} from './client.js';
export {
  type ClientErrorCode,
  ClientErrorCodes,
  isTesseraClientError,
  TesseraClientError,
} from './errors.js';
export type { FetchLike } from './http/transport.js';
export { type BroadcastLockOptions, broadcastChannelLock } from './lock/broadcast-lock.js';
export { processLock, type TokenLock } from './lock/lock.js';
export { type WebLocksOptions, webLocks } from './lock/web-locks.js';
export type { LogoutOptions, LogoutResult, TesseraUser } from './methods/account.js';
export type { SignInOptions, SignInResult } from './methods/context.js';
export type { DeviceMethods, TrustedDevice } from './methods/devices.js';
export type { OtpChallenge, OtpMethods } from './methods/otp.js';
export type {
  Passkey,
  PasskeyAutofillOptions,
  PasskeyMethods,
  PasskeySignInOptions,
} from './methods/passkeys.js';
export type { PinMethods, PinStatus } from './methods/pin.js';
export type { ChannelLike } from './session/channel.js';
export type { AuthEvent, AuthEventType, AuthListener } from './session/events.js';
export {
  type BrowserStorageOptions,
  browserStorage,
  type LocalStorageLike,
} from './storage/browser-storage.js';
export { type IndexedDbKeyStoreOptions, indexedDbKeyStore } from './storage/indexeddb-key-store.js';
export { type KeyStore, memoryKeyStore, type StoredKey } from './storage/key-store.js';
export { memoryStorage, type TokenStorage } from './storage/token-storage.js';
export { credentialsAuthenticator } from './webauthn/authenticator.js';
export type {
  AuthenticationResponseJSON,
  CreationOptionsJSON,
  CredentialsLike,
  PasskeyAuthenticator,
  PasskeyCeremonyOptions,
  RegistrationResponseJSON,
  RequestOptionsJSON,
} from './webauthn/types.js';
