import { ErrorCodes } from '@tessera/core';
import { ClientErrorCodes, TesseraClientError } from '../errors.js';
import { authenticationToJSON, registrationToJSON, toCreationOptions, toRequestOptions } from './convert.js';
import type { CredentialsLike, PasskeyAuthenticator } from './types.js';

const unavailable = (detail: string, cause?: unknown) =>
  new TesseraClientError(ClientErrorCodes.webauthnUnavailable, detail, { cause });

/** True for an IPv4 or IPv6 literal (as `location.hostname` gives them). */
const isIpAddress = (host: string) => /^(\d{1,3}\.){3}\d{1,3}$|^\[.*\]$/.test(host);

/**
 * The error for a page whose host the relying-party id does not cover (the browser's
 * SecurityError): says what to do, including the usual development slip of opening 127.0.0.1.
 */
export function originMismatch(rpId: string | undefined, cause?: unknown): TesseraClientError {
  const where = globalThis.location;
  const host = where?.hostname ?? '';
  const detail = isIpAddress(host)
    ? `passkeys need a domain name, not an IP address (${host}): open this page at ${where.protocol}//localhost${where.port ? `:${where.port}` : ''} instead`
    : `this page's host${host ? ` (${host})` : ''} is neither the passkey relying-party id${rpId ? ` (${rpId})` : ''} nor under it: open the app on that domain, or change the project's RP id`;
  return new TesseraClientError(ClientErrorCodes.webauthnOriginMismatch, detail, { cause });
}

const errorName = (error: unknown) =>
  typeof error === 'object' && error !== null && 'name' in error ? String(error.name) : 'Error';

/** A DOMException of a WebAuthn ceremony → a typed error. */
function ceremonyError(error: unknown, rpId: string | undefined): TesseraClientError {
  if (error instanceof TesseraClientError) return error;
  const name = errorName(error);
  if (name === 'AbortError')
    return new TesseraClientError(ClientErrorCodes.webauthnCancelled, 'the passkey request was cancelled', {
      cause: error,
    });
  if (name === 'NotAllowedError')
    return new TesseraClientError(
      ClientErrorCodes.webauthnCancelled,
      'the passkey prompt was dismissed or timed out',
      { cause: error },
    );
  if (name === 'SecurityError') return originMismatch(rpId, error);
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
    async create(options, ceremony = {}) {
      const creds = container();
      let credential: Credential | null;
      try {
        credential = await creds.create({ publicKey: toCreationOptions(options), ...ceremony });
      } catch (error) {
        throw ceremonyError(error, options.rp.id);
      }
      if (!isPublicKeyCredential(credential)) throw ceremonyError({ name: 'NotAllowedError' }, undefined);
      return registrationToJSON(credential);
    },
    async get(options, ceremony = {}) {
      const creds = container();
      let credential: Credential | null;
      try {
        credential = await creds.get({ publicKey: toRequestOptions(options), ...ceremony });
      } catch (error) {
        throw ceremonyError(error, options.rpId);
      }
      if (!isPublicKeyCredential(credential)) throw ceremonyError({ name: 'NotAllowedError' }, undefined);
      return authenticationToJSON(credential);
    },
  };
}

/**
 * The credentials container to use, or a `webauthn_unavailable` error where there is none; on a
 * page opened at an IP address, where WebAuthn can never work, the `webauthn_origin_mismatch`
 * error saying to use localhost, before any challenge is spent.
 */
export function requireCredentials(credentials: CredentialsLike | undefined): CredentialsLike {
  if (isIpAddress(globalThis.location?.hostname ?? '')) throw originMismatch(undefined);
  const found = credentials ?? (globalThis.navigator?.credentials as CredentialsLike | undefined);
  if (typeof found?.create !== 'function' || typeof found.get !== 'function')
    throw unavailable('WebAuthn is not available here (no navigator.credentials)');
  return found;
}

/** Whether the browser offers passkeys in autofill (`PublicKeyCredential.isConditionalMediationAvailable`). */
export async function conditionalMediationAvailable(): Promise<boolean> {
  const pkc = (
    globalThis as { PublicKeyCredential?: { isConditionalMediationAvailable?: () => Promise<boolean> } }
  ).PublicKeyCredential;
  try {
    return (await pkc?.isConditionalMediationAvailable?.()) === true;
  } catch {
    return false;
  }
}
