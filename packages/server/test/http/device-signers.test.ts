/**
 * Issue 30: device and PIN proofs from ordinary signers. WebCrypto, the Android Keystore, the
 * Secure Enclave and OpenSSL leave ECDSA's s to chance, so an app that is not @tessera/client
 * sends a high s about one time in two. Each signer here signs until it gets a high s (so the
 * test does not depend on luck) and the service must accept it for registration, device sign-in
 * and PIN sign-in. Non-canonical encodings stay refused; access tokens keep their one spelling
 * (verify.test.ts: "the high-S twin (r, n − s) of a valid token is invalid").
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject, sign as nodeSign } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { assertProblem, eachDialect, startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import {
  bearer,
  completeDeviceSignIn,
  otpUser,
  P256_N,
  type SignedInUser,
  setPin,
  signedText,
  startDeviceSignIn,
  type TestDevice,
} from '../helpers/sign-in-methods.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60', TESSERA_RATE_LIMIT_OTP_START: '100000/60' };
const PIN = '73915062';
const { subtle } = globalThis.crypto;

/** The s of raw r‖s (64 bytes) or of DER (SEQUENCE { INTEGER r, INTEGER s }). */
function sOf(signature: Buffer): bigint {
  if (signature.length === 64) return BigInt(`0x${signature.subarray(32).toString('hex')}`);
  const rLength = signature[3]!;
  return BigInt(`0x${signature.subarray(4 + rLength + 2).toString('hex')}`);
}

const isHigh = (signature: Buffer) => sOf(signature) > P256_N / 2n;

/** Signs until the signature has a high s: what half of an unnormalising signer's signatures are. */
async function highS(signOnce: () => Promise<Buffer> | Buffer): Promise<string> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const signature = await signOnce();
    if (isHigh(signature)) return signature.toString('base64url');
  }
  throw new Error('no high s in 200 signatures');
}

interface Signer {
  name: string;
  /** A fresh device key; `sign` gives a signature with a high s. */
  create(): Promise<TestDevice>;
}

/** node:crypto with its default DER encoding (as Android's SHA256withECDSA and iOS's SecKey give). */
const nodeDer: Signer = {
  name: 'node:crypto, DER, s not normalised',
  async create() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return {
      jwk: publicKey.export({ format: 'jwk' }) as JsonWebKey,
      sign: (text) => highS(() => nodeSign('sha256', Buffer.from(text, 'utf8'), privateKey)),
    };
  },
};

/** node:crypto with raw r‖s (ieee-p1363). */
const nodeRaw: Signer = {
  name: 'node:crypto, raw r‖s, s not normalised',
  async create() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const key: KeyObject = privateKey;
    return {
      jwk: publicKey.export({ format: 'jwk' }) as JsonWebKey,
      sign: (text) =>
        highS(() => nodeSign('sha256', Buffer.from(text, 'utf8'), { key, dsaEncoding: 'ieee-p1363' })),
    };
  },
};

/** Raw WebCrypto, as a browser app that does not use @tessera/client signs. */
const webCrypto: Signer = {
  name: 'WebCrypto (crypto.subtle), raw r‖s as it comes',
  async create() {
    const pair = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
    return {
      jwk: await subtle.exportKey('jwk', pair.publicKey),
      sign: (text) =>
        highS(async () =>
          Buffer.from(
            await subtle.sign(
              { name: 'ECDSA', hash: 'SHA-256' },
              pair.privateKey,
              new TextEncoder().encode(text),
            ),
          ),
        ),
    };
  },
};

eachDialect('device and PIN proofs from signers that leave s to chance (issue 30)', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: ENV });
  });
  after(() => server.close());

  /** Registers `device` for `user`, its proof signed by `sign`. */
  const register = async (user: SignedInUser, device: TestDevice) => {
    const started = await server.request('POST', '/v1/devices/register/start', {
      headers: bearer(user.bundle),
    });
    assert.equal(started.status, 200, started.text);
    const { challenge_id, nonce } = started.body;
    const signature = await device.sign(
      signedText('device-register', user.project.api_key_id, challenge_id, nonce),
    );
    return server.request('POST', '/v1/devices', {
      body: { challenge_id, public_key: device.jwk, signature },
      headers: bearer(user.bundle),
    });
  };

  const signIn = async (method: 'device' | 'pin', deviceId: string, device: TestDevice) => {
    const started = await startDeviceSignIn(server, method, deviceId);
    assert.equal(started.status, 200, started.text);
    const { challenge_id, nonce } = started.body;
    const purpose = method === 'pin' ? 'pin-signin' : 'device-signin';
    const signature = await device.sign(signedText(purpose, server.project.api_key_id, challenge_id, nonce));
    assert.ok(isHigh(Buffer.from(signature, 'base64url')), 'the signer gave a high s');
    return completeDeviceSignIn(server, method, {
      challenge_id,
      signature,
      ...(method === 'pin' ? { pin: PIN } : {}),
    });
  };

  for (const signer of [nodeDer, nodeRaw, webCrypto]) {
    describe(signer.name, () => {
      test('registration, device sign-in and PIN sign-in accept a high s', async () => {
        const user = await otpUser(server, uniqueEmail('signer'));
        const device = await signer.create();
        const registered = await register(user, device);
        assert.equal(registered.status, 201, registered.text);
        const deviceId = registered.body.device_id as string;

        const viaDevice = await signIn('device', deviceId, device);
        assert.equal(viaDevice.status, 200, viaDevice.text);
        assert.equal(viaDevice.body.oauth_token.auth_method, 'TRUSTED DEVICE');

        await setPin(server, user, PIN);
        const viaPin = await signIn('pin', deviceId, device);
        assert.equal(viaPin.status, 200, viaPin.text);
        assert.equal(viaPin.body.oauth_token.auth_method, 'PIN');
      });
    });
  }

  test('non-canonical encodings of a high-s signature stay refused: padded DER, a stray byte, padding', async () => {
    const user = await otpUser(server, uniqueEmail('signer'));
    const device = await nodeDer.create();
    const registered = await register(user, device);
    assert.equal(registered.status, 201, registered.text);
    const deviceId = registered.body.device_id as string;
    const respell: Record<string, (der: Buffer) => string> = {
      's with a needless leading zero': (der) => {
        const rLength = der[3]!;
        const s = der.subarray(4 + rLength + 2);
        return Buffer.concat([
          Buffer.from([0x30, der[1]! + 1]),
          der.subarray(2, 4 + rLength),
          Buffer.from([0x02, s.length + 1, 0]),
          s,
        ]).toString('base64url');
      },
      'a byte after the sequence': (der) => Buffer.concat([der, Buffer.from([0])]).toString('base64url'),
      'base64 padding': (der) => `${der.toString('base64url')}=`,
      'standard base64 alphabet': (der) => der.toString('base64').replace(/=+$/, ''),
    };
    for (const [name, spell] of Object.entries(respell)) {
      const started = await startDeviceSignIn(server, 'device', deviceId);
      const { challenge_id, nonce } = started.body;
      const der = Buffer.from(
        await device.sign(signedText('device-signin', server.project.api_key_id, challenge_id, nonce)),
        'base64url',
      );
      const spelled = spell(der);
      if (spelled === der.toString('base64url')) continue; // e.g. no '+' or '/' in this signature
      const answer = await completeDeviceSignIn(server, 'device', { challenge_id, signature: spelled });
      assert.equal(answer.status, 401, `${name}: ${answer.text}`);
      assertProblem(answer, 401, 'invalid_signature');
    }
  });
});
