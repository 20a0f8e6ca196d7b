/**
 * A software WebAuthn authenticator for the tests: a P-256 credential made with node:crypto, and
 * the registration and authentication responses a browser would hand to the app, byte for byte
 * (clientDataJSON, CBOR attestation object, authenticator data, DER signatures).
 *
 * Everything a real authenticator decides can be overridden: user verification, the signature
 * counter, the origin the "browser" reports and the relying-party id it hashes.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';

/** The origin and relying-party id of the test project (`server.project`). */
export const TEST_ORIGIN = 'http://app.test';
export const TEST_RP_ID = 'app.test';

// ── A tiny CBOR encoder (RFC 8949): unsigned and negative integers, byte and text strings, maps.
// Lengths always take their shortest form, as the canonical encoding WebAuthn expects.

/** A CBOR value this encoder knows: ints, bytes, text, and maps of those (keys in insertion order). */
export type CborValue = number | string | Uint8Array | CborMap;
export type CborMap = Map<number | string, CborValue>;

function head(major: number, length: number): Buffer {
  const type = major << 5;
  if (length < 24) return Buffer.from([type | length]);
  if (length < 0x100) return Buffer.from([type | 24, length]);
  if (length < 0x10000) {
    const b = Buffer.alloc(3);
    b[0] = type | 25;
    b.writeUInt16BE(length, 1);
    return b;
  }
  if (length < 0x100000000) {
    const b = Buffer.alloc(5);
    b[0] = type | 26;
    b.writeUInt32BE(length, 1);
    return b;
  }
  throw new RangeError('value too large for this CBOR encoder');
}

export function cbor(value: CborValue): Buffer {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new TypeError('only integers are supported');
    return value >= 0 ? head(0, value) : head(1, -1 - value);
  }
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  const parts: Buffer[] = [head(5, value.size)];
  for (const [k, v] of value) parts.push(cbor(k), cbor(v));
  return Buffer.concat(parts);
}

// ── Authenticator data (WebAuthn §6.1).

export const FLAG_UP = 0x01;
export const FLAG_UV = 0x04;
export const FLAG_AT = 0x40;

const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();
const b64url = (data: Uint8Array | string): string => Buffer.from(data).toString('base64url');

function counterBytes(counter: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(counter, 0);
  return b;
}

/** What the "user" and the "browser" do in one ceremony. */
export interface CeremonyOptions {
  /** The challenge from the server's options (base64url). */
  challenge: string;
  /** User verification (biometric or device PIN) performed; default true. */
  uv?: boolean;
  /** User presence; default true. */
  up?: boolean;
  /** The signature counter to report; default: the authenticator's counter plus one (0 at registration). */
  counter?: number;
  /** The origin in clientDataJSON; default http://app.test. */
  origin?: string;
  /** The relying-party id hashed into the authenticator data; default the authenticator's. */
  rpId?: string;
}

export interface RegistrationOptions extends CeremonyOptions {
  /** Attestation statement format: 'none' (the default) or 'packed' self-attestation. */
  fmt?: 'none' | 'packed';
}

export interface AuthenticationOptions extends CeremonyOptions {
  /** userHandle to return (base64url of the WebAuthn user id); default the one given at registration. */
  userHandle?: string | null;
}

/** One passkey on a software authenticator. */
export class SoftwareAuthenticator {
  readonly credentialId: Buffer = randomBytes(32);
  readonly aaguid: Buffer = Buffer.alloc(16);
  /** The last counter value reported. */
  counter = 0;
  /** The WebAuthn user id (base64url) the credential was created for. */
  userHandle: string | undefined;
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;

  constructor(readonly rpId: string = TEST_RP_ID) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    this.#publicKey = publicKey;
  }

  /** The credential id as the server stores and lists it (base64url). */
  get id(): string {
    return b64url(this.credentialId);
  }

  /** COSE_Key of the public key: EC2, ES256, P-256 (RFC 9053). */
  cosePublicKey(): Buffer {
    const jwk = this.#publicKey.export({ format: 'jwk' });
    return cbor(
      new Map<number, CborValue>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
  }

  #authenticatorData(options: CeremonyOptions, counter: number, attested: boolean): Buffer {
    let flags = 0;
    if (options.up ?? true) flags |= FLAG_UP;
    if (options.uv ?? true) flags |= FLAG_UV;
    if (attested) flags |= FLAG_AT;
    const parts = [sha256(options.rpId ?? this.rpId), Buffer.from([flags]), counterBytes(counter)];
    if (attested) {
      const idLength = Buffer.alloc(2);
      idLength.writeUInt16BE(this.credentialId.length, 0);
      parts.push(this.aaguid, idLength, this.credentialId, this.cosePublicKey());
    }
    return Buffer.concat(parts);
  }

  #clientData(type: 'webauthn.create' | 'webauthn.get', options: CeremonyOptions): Buffer {
    return Buffer.from(
      JSON.stringify({
        type,
        challenge: options.challenge,
        origin: options.origin ?? TEST_ORIGIN,
        crossOrigin: false,
      }),
      'utf8',
    );
  }

  /** navigator.credentials.create(): a RegistrationResponseJSON for these options. */
  register(options: RegistrationOptions & { userHandle?: string }): RegistrationResponseJSON {
    const counter = options.counter ?? 0;
    this.counter = counter;
    this.userHandle = options.userHandle;
    const clientDataJSON = this.#clientData('webauthn.create', options);
    const authData = this.#authenticatorData(options, counter, true);
    const attStmt: CborMap = new Map();
    if (options.fmt === 'packed') {
      // Self attestation: alg of the credential, signed by the credential key itself.
      attStmt.set('alg', -7);
      attStmt.set('sig', sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), this.#privateKey));
    }
    const attestationObject = cbor(
      new Map<string, CborValue>([
        ['fmt', options.fmt ?? 'none'],
        ['attStmt', attStmt],
        ['authData', authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  /** navigator.credentials.get(): an AuthenticationResponseJSON for these options. */
  authenticate(options: AuthenticationOptions): AuthenticationResponseJSON {
    const counter = options.counter ?? this.counter + 1;
    this.counter = counter;
    const clientDataJSON = this.#clientData('webauthn.get', options);
    const authenticatorData = this.#authenticatorData(options, counter, false);
    // ECDSA over authenticatorData ‖ SHA-256(clientDataJSON), DER-encoded as authenticators do.
    const signature = sign(
      'sha256',
      Buffer.concat([authenticatorData, sha256(clientDataJSON)]),
      this.#privateKey,
    );
    const userHandle = options.userHandle === undefined ? this.userHandle : options.userHandle;
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authenticatorData),
        signature: b64url(signature),
        ...(userHandle ? { userHandle } : {}),
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }
}
