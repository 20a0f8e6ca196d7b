import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/index.js';

/** Purposes of keys derived from the master key; each key is used for one purpose only. */
export type KeyPurpose =
  | 'signing-key-encryption'
  | 'otp-code-mac'
  | 'pin-pepper'
  | 'refresh-successor'
  | 'webhook-secret'
  | 'passkey-decoy'
  | 'oauth-csrf';

/**
 * The root secret (32 bytes). Every other server secret is derived from it with HKDF, so one
 * variable protects the signing keys at rest, the OTP hashes and the PIN pepper.
 */
export class MasterKey {
  readonly #key: Buffer;
  readonly #derived = new Map<KeyPurpose, Buffer>();

  constructor(key: Buffer) {
    if (key.length !== 32) throw new ConfigError('TESSERA_MASTER_KEY must decode to exactly 32 bytes');
    this.#key = key;
  }

  /** Parses base64, base64url or hex of 32 bytes. */
  static parse(value: string): MasterKey {
    const trimmed = value.trim();
    const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
      ? Buffer.from(trimmed, 'hex')
      : Buffer.from(trimmed, 'base64');
    return new MasterKey(bytes);
  }

  derive(purpose: KeyPurpose): Buffer {
    let key = this.#derived.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.#key, Buffer.alloc(0), `tessera/${purpose}`, 32));
      this.#derived.set(purpose, key);
    }
    return key;
  }
}

/**
 * The configured master key, or in development a key file in the data directory (created on first
 * use, mode 0600). `generated` tells the caller to warn loudly.
 */
export function loadMasterKey(
  configured: string | undefined,
  dataDir: string,
): { key: MasterKey; file?: string; created: boolean } {
  if (configured) return { key: MasterKey.parse(configured), created: false };
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) return { key: MasterKey.parse(readFileSync(file, 'utf8')), file, created: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { key: MasterKey.parse(readFileSync(file, 'utf8')), file, created: true };
}

/** AES-256-GCM: base64url(iv ‖ ciphertext ‖ tag). `aad` binds the ciphertext to its context. */
export function seal(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** Inverse of seal; throws when the key, the AAD or the ciphertext is wrong. */
export function open(key: Buffer, sealed: string, aad: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < 28) throw new Error('sealed value is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString(
    'utf8',
  );
}
