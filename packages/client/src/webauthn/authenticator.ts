import { ErrorCodes } from '@tessera/core';
import { ClientErrorCodes, TesseraClientError } from '../errors.js';
import { authenticationToJSON, registrationToJSON, toCreationOptions, toRequestOptions } from './convert.js';
import type { CredentialsLike, PasskeyAuthenticator } from './types.js';

const unavailable = (detail: string, cause?: unknown) =>
  new TesseraClientError(ClientErrorCodes.webauthnUnavailable, detail, { cause });

/** A DOMException of a WebAuthn ceremony → a typed error. */
function ceremonyError(error: unknown): TesseraClientError {
  if (error instanceof TesseraClientError) return error;
  const name = typeof error === 'object' && error !== null && 'name' in error ? String(error.name) : 'Error';
  if (name === 'NotAllowedError' || name === 'AbortError')
    return new TesseraClientError(
      ClientErrorCodes.webauthnCancelled,
      'the passkey prompt was dismissed or timed out',
      { cause: error },
    );
  if (name === 'InvalidStateError')
    return new TesseraClientError(
      ErrorCodes.conflict,
      'this authenticator already holds a passkey for this account',
      { cause: error },
    );
  return unavailable(`the authenticator could not be used (${name})`, error);
}

function isPublicKeyCredential(value: Credential | null): value is PublicKeyCredential {
  return value !== null && 'rawId' in value && 'response' in value;
}

/**
 * A {@link PasskeyAuthenticator} over `navigator.credentials` (or an injected look-alike):
 * converts the service's JSON options to ArrayBuffers and the answers back. Fails with
 * `webauthn_unavailable` where there is no WebAuthn.
 *
 * @example
 * ```ts
 * import { credentialsAuthenticator } from '@tessera/client';
 *
 * const authenticator = credentialsAuthenticator(navigator.credentials);
 * ```
 */
export function credentialsAuthenticator(credentials?: CredentialsLike): PasskeyAuthenticator {
  const container = () => requireCredentials(credentials);
  return {
    async create(options) {
      const creds = container();
      let credential: Credential | null;
      try {
        credential = await creds.create({ publicKey: toCreationOptions(options) });
      } catch (error) {
        throw ceremonyError(error);
      }
      if (!isPublicKeyCredential(credential)) throw ceremonyError({ name: 'NotAllowedError' });
      return registrationToJSON(credential);
    },
    async get(options) {
      const creds = container();
      let credential: Credential | null;
      try {
        credential = await creds.get({ publicKey: toRequestOptions(options) });
      } catch (error) {
        throw ceremonyError(error);
      }
      if (!isPublicKeyCredential(credential)) throw ceremonyError({ name: 'NotAllowedError' });
      return authenticationToJSON(credential);
    },
  };
}

/** The credentials container to use, or a `webauthn_unavailable` error where there is none. */
export function requireCredentials(credentials: CredentialsLike | undefined): CredentialsLike {
  const found = credentials ?? (globalThis.navigator?.credentials as CredentialsLike | undefined);
  if (typeof found?.create !== 'function' || typeof found.get !== 'function')
    throw unavailable('WebAuthn is not available here (no navigator.credentials)');
  return found;
}
