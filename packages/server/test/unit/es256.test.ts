// One spelling per token and per device signature: canonical base64url in every segment, and a
// low s (issue 12). Every forged value here is made from a real, valid one and is shown to pass a
// lenient check (Buffer's base64url decoder, OpenSSL's ECDSA) before the strict one refuses it.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { verifyDeviceSignature } from '../../src/modules/device/device-key.js';
import {
  decodeAsciiBase64url,
  decodeJwt,
  isCanonicalBase64url,
  isLowS,
  normaliseLowS,
  signJwt,
  verifyEs256,
} from '../../src/tokens/jwt.js';
import { otherS, P256_N } from '../helpers/sign-in-methods.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The definition the fast check stands for: decoding, then encoding again, gives the input back. */
const roundTrips = (text: string) => Buffer.from(text, 'base64url').toString('base64url') === text;

/** Every string of up to three characters of the alphabet, the empty one included. */
function shortStrings(): string[] {
  const strings = [''];
  for (const a of ALPHABET) {
    strings.push(a);
    for (const b of ALPHABET) {
      strings.push(a + b);
      for (const c of ALPHABET) strings.push(a + b + c);
    }
  }
  return strings;
}

const sOf = (raw: Uint8Array) => BigInt(`0x${Buffer.from(raw.subarray(32)).toString('hex')}`);

/**
 * Other spellings of a base64url segment that Buffer's lenient decoder reads as the same bytes:
 * unused low bits set in the last character, padding, white space, the standard alphabet, a lone
 * trailing character.
 */
function respellings(segment: string): string[] {
  const candidates: string[] = [];
  const last = ALPHABET.indexOf(segment.at(-1)!);
  const unused = segment.length % 4 === 2 ? 0x0f : segment.length % 4 === 3 ? 0x03 : 0;
  for (let bits = 1; bits <= unused; bits++) candidates.push(segment.slice(0, -1) + ALPHABET[last | bits]);
  candidates.push(`${segment}${'='.repeat((4 - (segment.length % 4)) % 4 || 4)}`);
  const middle = segment.length >> 1;
  candidates.push(`${segment.slice(0, middle)} ${segment.slice(middle)}`);
  candidates.push(`${segment.slice(0, middle)}\n${segment.slice(middle)}`);
  candidates.push(segment.replaceAll('-', '+').replaceAll('_', '/'));
  candidates.push(`${segment}A`);
  const bytes = Buffer.from(segment, 'base64url');
  return candidates.filter((c) => c !== segment && Buffer.from(c, 'base64url').equals(bytes));
}

/** A real token of an issuer key; `pad` lengthens the payload so segments end on every remainder. */
function realToken(pad = 0) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const token = signJwt(
    { alg: 'ES256', kid: 'k1', typ: 'at+jwt' },
    { sub: 'usr_1', aud: 'pk_1', type: 'access_token', pad: 'x'.repeat(pad) },
    privateKey,
  );
  const decoded = decodeJwt(token);
  assert.ok(decoded && verifyEs256(decoded, publicKey), 'the real token verifies');
  return { token, publicKey, privateKey };
}

describe('isCanonicalBase64url', () => {
  test('agrees with decode-then-encode on every string of up to three characters of the alphabet', () => {
    for (const s of shortStrings()) assert.equal(isCanonicalBase64url(s), roundTrips(s), JSON.stringify(s));
  });

  test('agrees with decode-then-encode on arbitrary strings, and on the encodings of arbitrary bytes', () => {
    const base64ish = fc.string({
      unit: fc.constantFrom(...ALPHABET, '=', '+', '/', ' ', '\n', '.', '%', 'é', '\u0000'),
      maxLength: 40,
    });
    fc.assert(
      fc.property(fc.oneof(base64ish, fc.string({ unit: 'binary' })), (s) => {
        assert.equal(isCanonicalBase64url(s), roundTrips(s), JSON.stringify(s));
      }),
      { numRuns: 5000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        assert.equal(isCanonicalBase64url(Buffer.from(bytes).toString('base64url')), true);
      }),
    );
  });
});

describe('decodeAsciiBase64url', () => {
  const decodes = (s: string) => {
    const bytes = decodeAsciiBase64url(s);
    if (bytes === undefined) return undefined;
    assert.ok(bytes.equals(Buffer.from(s, 'base64url')), JSON.stringify(s));
    return bytes;
  };

  test('agrees with decode-then-encode on every string of up to three characters of the alphabet', () => {
    for (const s of shortStrings()) assert.equal(decodes(s) !== undefined, roundTrips(s), JSON.stringify(s));
  });

  test('agrees with decode-then-encode on arbitrary ASCII strings, and on the encodings of arbitrary bytes', () => {
    const base64ish = fc.string({
      unit: fc.constantFrom(...ALPHABET, '=', '+', '/', ' ', '\n', '\t', '.', '%', '\u0000', '\u007f'),
      maxLength: 40,
    });
    const ascii = fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)) });
    fc.assert(
      fc.property(fc.oneof(base64ish, ascii), (s) => {
        assert.equal(decodes(s) !== undefined, roundTrips(s), JSON.stringify(s));
      }),
      { numRuns: 20000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        assert.deepEqual(decodes(Buffer.from(bytes).toString('base64url')), Buffer.from(bytes));
      }),
    );
  });

  test('is for ASCII only: outside it Buffer reads a character by its low byte (Ł as A)', () => {
    // Why decodeJwt checks that the header and payload are ASCII before decoding them this way.
    assert.deepEqual(Buffer.from('QU\u0141D', 'base64url'), Buffer.from('QUAD', 'base64url'));
  });
});

describe('access tokens (decodeJwt, verifyEs256)', () => {
  test('a respelled segment, anywhere in the token, is refused although it decodes to the same bytes', () => {
    const seen = new Set<string>();
    // Payload paddings that make the segments end on every remainder modulo 4.
    for (const pad of [0, 1, 2, 3]) {
      const { token } = realToken(pad);
      const segments = token.split('.');
      segments.forEach((segment, index) => {
        const spellings = respellings(segment);
        assert.ok(spellings.length > 0, `segment ${index} has other spellings`);
        for (const spelling of spellings) {
          seen.add(`${index}:${segment.length % 4}`);
          const forged = segments.map((s, i) => (i === index ? spelling : s)).join('.');
          assert.equal(decodeJwt(forged), undefined, `segment ${index} as ${JSON.stringify(spelling)}`);
        }
      });
    }
    // The signature (86 characters: 4 unused bits) and header and payload of each length class.
    assert.ok(seen.has('2:2'));
    assert.ok([...seen].filter((k) => k.startsWith('1:')).length >= 3, [...seen].join(' '));
  });

  test('a character outside ASCII that Buffer would read as one of the alphabet is refused in every segment', () => {
    for (const pad of [0, 1, 2, 3]) {
      const { token } = realToken(pad);
      const segments = token.split('.');
      segments.forEach((segment, index) => {
        for (const at of [0, segment.length >> 1, segment.length - 1]) {
          // The character whose low byte is the one there: the same bytes to a lenient decoder.
          const alias = String.fromCharCode(0x100 | segment.charCodeAt(at));
          const spelling = segment.slice(0, at) + alias + segment.slice(at + 1);
          assert.ok(Buffer.from(spelling, 'base64url').equals(Buffer.from(segment, 'base64url')));
          const forged = segments.map((s, i) => (i === index ? spelling : s)).join('.');
          assert.equal(decodeJwt(forged), undefined, `segment ${index}, character ${at}`);
        }
      });
    }
  });

  test('a header segment decoded before gives the same frozen header; another one is decoded afresh', () => {
    const { token } = realToken();
    const { token: other } = realToken(1);
    const first = decodeJwt(token)!;
    assert.ok(Object.isFrozen(first.header));
    assert.equal(decodeJwt(token)!.header, first.header);
    // Another key's token (another kid would do; here another key with the same header text).
    const second = decodeJwt(other)!;
    assert.deepEqual(second.header, first.header);
    const [, payload, signature] = token.split('.');
    const otherHeader = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k2', typ: 'at+jwt' })).toString(
      'base64url',
    );
    assert.deepEqual(decodeJwt(`${otherHeader}.${payload}.${signature}`)!.header, {
      alg: 'ES256',
      kid: 'k2',
      typ: 'at+jwt',
    });
    // A respelled header right after its canonical one is still refused: the memo holds only what decoded.
    const respelled = respellings(token.split('.')[0]!)[0]!;
    decodeJwt(token);
    assert.equal(decodeJwt(`${respelled}.${payload}.${signature}`), undefined);
  });

  test('the signature with trailing bits set verifies under a lenient decoder: that is what is refused', () => {
    const { token, publicKey } = realToken();
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const trailing = respellings(signature).filter(
      (s) => s.length === signature.length && s.slice(0, -1) === signature.slice(0, -1),
    );
    assert.equal(trailing.length, 15, 'the 4 unused bits of an 86-character signature');
    for (const forged of trailing) {
      const lenient = Buffer.from(forged, 'base64url');
      assert.ok(
        verify(
          'sha256',
          Buffer.from(`${header}.${payload}`),
          { key: publicKey, dsaEncoding: 'ieee-p1363' },
          lenient,
        ),
      );
      assert.equal(decodeJwt(`${header}.${payload}.${forged}`), undefined);
    }
  });

  test('the high-S twin (r, n − s) of a real signature verifies in OpenSSL but is refused', () => {
    const { token, publicKey } = realToken();
    const decoded = decodeJwt(token)!;
    const twin = otherS(decoded.signature);
    assert.ok(sOf(twin) > P256_N / 2n);
    assert.ok(
      verify(
        'sha256',
        Buffer.from(decoded.signingInput),
        { key: publicKey, dsaEncoding: 'ieee-p1363' },
        twin,
      ),
      'ECDSA itself accepts the twin',
    );
    const forged = `${decoded.signingInput}.${twin.toString('base64url')}`;
    const forgedDecoded = decodeJwt(forged);
    assert.ok(forgedDecoded, 'the twin is well-formed');
    assert.equal(verifyEs256(forgedDecoded, publicKey), false);
  });

  test('signJwt always writes a low s (OpenSSL alone would write a high one half of the time)', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    for (let i = 0; i < 200; i++) {
      const token = signJwt({ alg: 'ES256', kid: 'k1' }, { i }, privateKey);
      const decoded = decodeJwt(token)!;
      assert.ok(sOf(decoded.signature) <= P256_N / 2n, `signature ${i} has a low s`);
      assert.ok(verifyEs256(decoded, publicKey));
    }
  });

  test('normaliseLowS is n − s for a high s and leaves a low s alone; isLowS splits at ⌊n/2⌋', () => {
    const raw = (s: bigint) =>
      Buffer.concat([Buffer.alloc(32, 7), Buffer.from(s.toString(16).padStart(64, '0'), 'hex')]);
    const half = P256_N / 2n;
    assert.equal(isLowS(raw(half)), true);
    assert.equal(isLowS(raw(half + 1n)), false);
    assert.equal(isLowS(raw(1n)), true);
    assert.equal(isLowS(Buffer.alloc(63)), false);
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: P256_N - 1n }), (s) => {
        const normalised = normaliseLowS(raw(s));
        assert.equal(sOf(normalised), s > half ? P256_N - s : s);
        assert.ok(normalised.subarray(0, 32).equals(Buffer.alloc(32, 7)), 'r untouched');
      }),
      { numRuns: 2000 },
    );
  });
});

/** DER of a raw r‖s signature, minimal INTEGERs (what a key store sends). */
function derOf(raw: Buffer): Buffer {
  const integer = (bytes: Buffer) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const value = bytes[i]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes.subarray(i)]) : bytes.subarray(i);
    return Buffer.concat([Buffer.from([0x02, value.length]), value]);
  };
  const body = Buffer.concat([integer(raw.subarray(0, 32)), integer(raw.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

describe('device signatures (verifyDeviceSignature)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const message = Buffer.from('tessera/v1/device-signin\npk_1\nch_1\nnonce');
  const realRaw = () =>
    normaliseLowS(sign('sha256', message, { key: privateKey, dsaEncoding: 'ieee-p1363' }));
  const openssl = (der: Buffer) => verify('sha256', message, publicKey, der);

  test('raw and DER with a low s are accepted', () => {
    for (let i = 0; i < 20; i++) {
      const raw = realRaw();
      assert.ok(verifyDeviceSignature(publicKey, message, raw.toString('base64url')));
      assert.ok(verifyDeviceSignature(publicKey, message, derOf(raw).toString('base64url')));
    }
  });

  // Issue 30: devices' signers leave s to chance; a challenge is single-use, so both twins pass.
  test('the high-S twin is accepted too, raw and DER (a device proof is over a single-use challenge)', () => {
    const twin = otherS(realRaw());
    assert.ok(verify('sha256', message, { key: publicKey, dsaEncoding: 'ieee-p1363' }, twin));
    assert.ok(openssl(derOf(twin)));
    assert.equal(verifyDeviceSignature(publicKey, message, twin.toString('base64url')), true);
    assert.equal(verifyDeviceSignature(publicKey, message, derOf(twin).toString('base64url')), true);
  });

  test('a respelled base64url signature is refused, raw and DER', () => {
    for (const bytes of [realRaw(), derOf(realRaw())]) {
      const text = bytes.toString('base64url');
      const spellings = respellings(text);
      assert.ok(spellings.length > 0);
      for (const spelling of spellings) {
        assert.equal(verifyDeviceSignature(publicKey, message, spelling), false, JSON.stringify(spelling));
      }
    }
  });

  test('DER in any but its one encoding is refused', () => {
    const raw = realRaw();
    const der = derOf(raw);
    const rLength = der[3]!;
    const r = der.subarray(4, 4 + rLength);
    const rest = der.subarray(4 + rLength);
    const variants = {
      'r with a needless leading zero': Buffer.concat([
        Buffer.from([0x30, der[1]! + 1, 0x02, rLength + 1, 0]),
        r,
        rest,
      ]),
      'a byte after the sequence': Buffer.concat([der, Buffer.from([0])]),
      'a long-form sequence length': Buffer.concat([Buffer.from([0x30, 0x81, der[1]!]), der.subarray(2)]),
      'a sequence length one too long': Buffer.concat([
        Buffer.from([0x30, der[1]! + 1]),
        der.subarray(2),
        Buffer.from([0]),
      ]),
      'not a sequence': Buffer.concat([Buffer.from([0x31]), der.subarray(1)]),
      's missing': Buffer.concat([Buffer.from([0x30, rLength + 2]), der.subarray(2, 4 + rLength)]),
    };
    for (const [name, bytes] of Object.entries(variants)) {
      assert.equal(verifyDeviceSignature(publicKey, message, bytes.toString('base64url')), false, name);
    }
    const negative = Buffer.from(der);
    negative[4] = negative[4]! | 0x80;
    assert.equal(
      verifyDeviceSignature(publicKey, message, negative.toString('base64url')),
      false,
      'negative r',
    );
  });
});
