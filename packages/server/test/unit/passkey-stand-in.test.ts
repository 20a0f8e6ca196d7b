import assert from 'node:assert/strict';
import { createPublicKey, createSign, generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import {
  convertCOSEtoPKCS,
  decodeCredentialPublicKey,
  verifySignature,
} from '@simplewebauthn/server/helpers';
import { standInKey } from '../../src/modules/biometric/biometric.service.js';

// The key an unknown credential's assertion is checked against in an identifier-first passkey
// sign-in: it must be a key SimpleWebAuthn takes (else the check would throw early, and the
// refusal would again take less time than a real passkey's).
test('the stand-in key is a COSE P-256 ES256 key SimpleWebAuthn decodes and checks signatures with', async () => {
  const key = await standInKey();
  assert.equal(await standInKey(), key, 'made once per process');
  const cose = decodeCredentialPublicKey(key) as unknown as Map<number, unknown>;
  assert.equal(cose.get(1), 2); // kty EC2
  assert.equal(cose.get(3), -7); // alg ES256
  assert.equal(cose.get(-1), 1); // crv P-256
  const point = convertCOSEtoPKCS(key);
  assert.equal(point.length, 65);
  assert.equal(point[0], 0x04);
  // A valid point on the curve (OpenSSL refuses anything else).
  createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: Buffer.from(point.subarray(1, 33)).toString('base64url'),
      y: Buffer.from(point.subarray(33)).toString('base64url'),
    },
    format: 'jwk',
  });
  // A signature by another key does not verify against it, and the check runs without throwing.
  const data = new Uint8Array(Buffer.from('assertion'));
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const signature = new Uint8Array(createSign('sha256').update(data).sign(other.privateKey));
  assert.equal(await verifySignature({ signature, data, credentialPublicKey: key }), false);
});
