/** A credential named in options, as JSON (id in base64url). */
export interface CredentialDescriptorJSON {
  id: string;
  type: 'public-key';
  transports?: string[];
}

/**
 * WebAuthn creation options as the service sends them (binary members in base64url).
 *
 * @example
 * ```ts
 * const create = (options: CreationOptionsJSON) => myPasskeyLibrary.create(options);
 * ```
 */
export interface CreationOptionsJSON {
  rp: { id?: string; name: string };
  user: { id: string; name: string; displayName: string };
  challenge: string;
  pubKeyCredParams: Array<{ type: 'public-key'; alg: number }>;
  timeout?: number;
  excludeCredentials?: CredentialDescriptorJSON[];
  authenticatorSelection?: AuthenticatorSelectionCriteria;
  attestation?: AttestationConveyancePreference;
  extensions?: AuthenticationExtensionsClientInputs;
}

/**
 * WebAuthn request options as the service sends them (binary members in base64url).
 *
 * @example
 * ```ts
 * const get = (options: RequestOptionsJSON) => myPasskeyLibrary.get(options);
 * ```
 */
export interface RequestOptionsJSON {
  challenge: string;
  timeout?: number;
  rpId?: string;
  allowCredentials?: CredentialDescriptorJSON[];
  userVerification?: UserVerificationRequirement;
  extensions?: AuthenticationExtensionsClientInputs;
}

/**
 * A new passkey as JSON (binary members in base64url), what the service verifies.
 *
 * @example
 * ```ts
 * const created: RegistrationResponseJSON = await authenticator.create(options);
 * ```
 */
export interface RegistrationResponseJSON {
  id: string;
  rawId: string;
  type: 'public-key';
  response: {
    clientDataJSON: string;
    attestationObject: string;
    authenticatorData?: string;
    transports?: string[];
    publicKeyAlgorithm?: number;
    publicKey?: string;
  };
  authenticatorAttachment?: string;
  clientExtensionResults: Record<string, unknown>;
}

/**
 * A passkey assertion as JSON (binary members in base64url), what the service verifies.
 *
 * @example
 * ```ts
 * const assertion: AuthenticationResponseJSON = await authenticator.get(options);
 * ```
 */
export interface AuthenticationResponseJSON {
  id: string;
  rawId: string;
  type: 'public-key';
  response: {
    clientDataJSON: string;
    authenticatorData: string;
    signature: string;
    userHandle?: string;
  };
  authenticatorAttachment?: string;
  clientExtensionResults: Record<string, unknown>;
}

/**
 * Passkey ceremonies at the JSON level, for platforms whose passkey library speaks JSON (React
 * Native libraries such as `react-native-passkey`). In browsers the SDK builds one over
 * `navigator.credentials` itself.
 *
 * @example
 * ```ts
 * import { Passkey } from 'react-native-passkey';
 * import { createTesseraClient, type PasskeyAuthenticator } from '@tessera/client';
 *
 * const authenticator: PasskeyAuthenticator = {
 *   create: (options) => Passkey.create(options),
 *   get: (options) => Passkey.get(options),
 * };
 * const tessera = createTesseraClient({ issuer, apiKeyId, authenticator });
 * ```
 */
export interface PasskeyAuthenticator {
  create(options: CreationOptionsJSON, ceremony?: PasskeyCeremonyOptions): Promise<RegistrationResponseJSON>;
  get(options: RequestOptionsJSON, ceremony?: PasskeyCeremonyOptions): Promise<AuthenticationResponseJSON>;
}

/**
 * How the SDK runs one ceremony: `signal` cancels it (a new ceremony cancels the one pending),
 * `mediation: 'conditional'` offers the passkeys in the autofill of a `webauthn` input instead of
 * a prompt. A JSON-level authenticator without these may ignore them.
 *
 * @example
 * ```ts
 * const authenticator: PasskeyAuthenticator = {
 *   create: (options, ceremony) => myLibrary.create(options, { signal: ceremony?.signal }),
 *   get: (options, ceremony) => myLibrary.get(options, { signal: ceremony?.signal }),
 * };
 * ```
 */
export interface PasskeyCeremonyOptions {
  signal?: AbortSignal;
  mediation?: 'conditional';
}

/**
 * The part of `navigator.credentials` the SDK uses; inject a fake in tests.
 *
 * @example
 * ```ts
 * import { createTesseraClient, type CredentialsLike } from '@tessera/client';
 *
 * const credentials: CredentialsLike = navigator.credentials;
 * const tessera = createTesseraClient({ issuer, apiKeyId, credentials });
 * ```
 */
export interface CredentialsLike {
  create(options: CredentialCreationOptions): Promise<Credential | null>;
  get(options: CredentialRequestOptions): Promise<Credential | null>;
}
