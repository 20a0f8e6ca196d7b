// A software WebAuthn authenticator shaped like `navigator.credentials`: it answers with
// ArrayBuffers as a browser would, so the SDK's conversions are exercised end to end against the
// real server (attestation "none", ES256, user verified).
import type { CredentialsLike } from '@tessera/client';
import { decodeBase64url, encodeBase64url } from '../../src/encoding/base64url.js';

type Cbor = number | string | Uint8Array | Cbor[] | Map<Cbor, Cbor> | { [k: string]: Cbor };

function head(major: number, n: number): number[] {
  if (n < 24) return [(major << 5) | n];
  if (n < 256) return [(major << 5) | 24, n];
  if (n < 65536) return [(major << 5) | 25, n >> 8, n & 255];
  return [(major << 5) | 26, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** A minimal CBOR encoder: the types attestation objects and COSE keys use. */
function cbor(value: Cbor): number[] {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = new TextEncoder().encode(value);
    return [...head(3, bytes.length), ...bytes];
  }
  if (value instanceof Uint8Array) return [...head(2, value.length), ...value];
  if (Array.isArray(value)) return [...head(4, value.length), ...value.flatMap(cbor)];
  const entries = value instanceof Map ? [...value] : Object.entries(value);
  return [...head(5, entries.length), ...entries.flatMap(([k, v]) => [...cbor(k), ...cbor(v)])];
}

const concat = (...parts: ArrayLike<number>[]) => Uint8Array.from(parts.flatMap((p) => Array.from(p)));
const sha256 = async (data: Uint8Array<ArrayBuffer>) =>
  new Uint8Array(await crypto.subtle.digest('SHA-256', data));
const u32 = (n: number) => [(n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255];
const buffer = (bytes: Uint8Array) => bytes.slice().buffer;

/** Raw r‖s (WebCrypto) → DER (what authenticators produce). */
function toDer(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const trimmed = bytes.slice(i);
    const padded = trimmed[0]! & 0x80 ? concat([0], trimmed) : trimmed;
    return concat([0x02, padded.length], padded);
  };
  const body = concat(integer(raw.slice(0, 32)), integer(raw.slice(32)));
  return concat([0x30, body.length], body);
}

interface StoredCredential {
  id: Uint8Array;
  rpId: string;
  userHandle: Uint8Array;
  keyPair: CryptoKeyPair;
  counter: number;
}

export interface FakeAuthenticator extends CredentialsLike {
  readonly stored: StoredCredential[];
  /** Answer with the UV flag cleared (a user-presence-only authenticator). */
  skipUserVerification: boolean;
}

export function fakeAuthenticator(origin = 'http://app.test'): FakeAuthenticator {
  const stored: StoredCredential[] = [];
  const clientData = (type: string, challenge: BufferSource) =>
    new TextEncoder().encode(
      JSON.stringify({
        type,
        challenge: encodeBase64url(challenge as ArrayBuffer | ArrayBufferView),
        origin,
        crossOrigin: false,
      }),
    );
  const self: FakeAuthenticator = {
    stored,
    skipUserVerification: false,
    async create(options) {
      const o = options.publicKey!;
      const rpId = o.rp.id ?? new URL(origin).hostname;
      const keyPair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, [
        'sign',
        'verify',
      ]);
      const jwk = await crypto.subtle.exportKey('jwk', keyPair.publicKey);
      const id = crypto.getRandomValues(new Uint8Array(16));
      const userId = new Uint8Array(o.user.id as ArrayBuffer);
      stored.push({ id, rpId, userHandle: userId, keyPair, counter: 0 });
      const cose = new Map<Cbor, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, decodeBase64url(jwk.x!)],
        [-3, decodeBase64url(jwk.y!)],
      ]);
      const flags = self.skipUserVerification ? 0x41 : 0x45; // UP, (UV), AT
      const authData = concat(
        await sha256(new TextEncoder().encode(rpId)),
        [flags],
        u32(0),
        new Uint8Array(16),
        [0, id.length],
        id,
        cbor(cose),
      );
      const attestationObject = Uint8Array.from(cbor({ fmt: 'none', attStmt: {}, authData }));
      return {
        id: encodeBase64url(id),
        rawId: buffer(id),
        type: 'public-key',
        authenticatorAttachment: 'platform',
        getClientExtensionResults: () => ({}),
        response: {
          clientDataJSON: buffer(clientData('webauthn.create', o.challenge)),
          attestationObject: buffer(attestationObject),
          getTransports: () => ['internal'],
        },
      } as unknown as Credential;
    },
    async get(options) {
      const o = options.publicKey!;
      const rpId = o.rpId ?? new URL(origin).hostname;
      const allowed = (o.allowCredentials ?? []).map((d) => encodeBase64url(d.id as ArrayBuffer));
      const credential = stored.find(
        (c) => c.rpId === rpId && (allowed.length === 0 || allowed.includes(encodeBase64url(c.id))),
      );
      if (!credential) throw new DOMException('no credential', 'NotAllowedError');
      credential.counter++;
      const flags = self.skipUserVerification ? 0x01 : 0x05;
      const authData = concat(await sha256(new TextEncoder().encode(rpId)), [flags], u32(credential.counter));
      const data = clientData('webauthn.get', o.challenge);
      const raw = new Uint8Array(
        await crypto.subtle.sign(
          { name: 'ECDSA', hash: 'SHA-256' },
          credential.keyPair.privateKey,
          concat(authData, await sha256(data)),
        ),
      );
      return {
        id: encodeBase64url(credential.id),
        rawId: buffer(credential.id),
        type: 'public-key',
        authenticatorAttachment: 'platform',
        getClientExtensionResults: () => ({}),
        response: {
          clientDataJSON: buffer(data),
          authenticatorData: buffer(authData),
          signature: buffer(toDer(raw)),
          userHandle: buffer(credential.userHandle),
        },
      } as unknown as Credential;
    },
  };
  return self;
}
