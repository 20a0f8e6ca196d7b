import { decodeBase64url, encodeBase64url } from '../encoding/base64url.js';
import type {
  AuthenticationResponseJSON,
  CreationOptionsJSON,
  CredentialDescriptorJSON,
  RegistrationResponseJSON,
  RequestOptionsJSON,
} from './types.js';

const descriptor = (d: CredentialDescriptorJSON): PublicKeyCredentialDescriptor => ({
  id: decodeBase64url(d.id),
  type: d.type,
  ...(d.transports && { transports: d.transports as AuthenticatorTransport[] }),
});

/** Creation options JSON → what `navigator.credentials.create({ publicKey })` takes. */
export function toCreationOptions(json: CreationOptionsJSON): PublicKeyCredentialCreationOptions {
  const { excludeCredentials, ...rest } = json;
  return {
    ...rest,
    challenge: decodeBase64url(json.challenge),
    user: { ...json.user, id: decodeBase64url(json.user.id) },
    ...(excludeCredentials && { excludeCredentials: excludeCredentials.map(descriptor) }),
  };
}

/** Request options JSON → what `navigator.credentials.get({ publicKey })` takes. */
export function toRequestOptions(json: RequestOptionsJSON): PublicKeyCredentialRequestOptions {
  const { allowCredentials, ...rest } = json;
  return {
    ...rest,
    challenge: decodeBase64url(json.challenge),
    ...(allowCredentials && { allowCredentials: allowCredentials.map(descriptor) }),
  };
}

const b64 = (value: ArrayBuffer | null | undefined) => (value ? encodeBase64url(value) : undefined);

function optional<T>(read: (() => T) | undefined): T | undefined {
  try {
    return read?.();
  } catch {
    return undefined;
  }
}

function common(credential: PublicKeyCredential) {
  return {
    id: credential.id,
    rawId: encodeBase64url(credential.rawId),
    type: 'public-key' as const,
    ...(credential.authenticatorAttachment && {
      authenticatorAttachment: credential.authenticatorAttachment,
    }),
    clientExtensionResults: (optional(() => credential.getClientExtensionResults()) ?? {}) as Record<
      string,
      unknown
    >,
  };
}

/** A new credential (ArrayBuffers) → the JSON the service verifies. */
export function registrationToJSON(credential: PublicKeyCredential): RegistrationResponseJSON {
  const response = credential.response as AuthenticatorAttestationResponse;
  const transports = optional(response.getTransports?.bind(response));
  const publicKeyAlgorithm = optional(response.getPublicKeyAlgorithm?.bind(response));
  const publicKey = b64(optional(response.getPublicKey?.bind(response)));
  const authenticatorData = b64(optional(response.getAuthenticatorData?.bind(response)));
  return {
    ...common(credential),
    response: {
      clientDataJSON: encodeBase64url(response.clientDataJSON),
      attestationObject: encodeBase64url(response.attestationObject),
      ...(authenticatorData && { authenticatorData }),
      ...(transports && { transports }),
      ...(publicKeyAlgorithm !== undefined && { publicKeyAlgorithm }),
      ...(publicKey && { publicKey }),
    },
  };
}

/** An assertion (ArrayBuffers) → the JSON the service verifies. */
export function authenticationToJSON(credential: PublicKeyCredential): AuthenticationResponseJSON {
  const response = credential.response as AuthenticatorAssertionResponse;
  const userHandle = b64(response.userHandle);
  return {
    ...common(credential),
    response: {
      clientDataJSON: encodeBase64url(response.clientDataJSON),
      authenticatorData: encodeBase64url(response.authenticatorData),
      signature: encodeBase64url(response.signature),
      ...(userHandle && { userHandle }),
    },
  };
}
