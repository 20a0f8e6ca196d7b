import { ClientErrorCodes, TesseraClientError } from '../errors.js';
import { storageKeys } from '../session/record.js';
import type { KeyStore } from '../storage/key-store.js';
import type { TokenStorage } from '../storage/token-storage.js';
import { isKeyPair } from './device-key.js';

/** This device's registration: its id at the service and its key pair (private key non-extractable). */
export interface LocalDevice {
  deviceId: string;
  keyPair: CryptoKeyPair;
}

/** Where this device's id (token storage) and key pair (key store) are kept. */
export class LocalDeviceStore {
  readonly #keys: ReturnType<typeof storageKeys>;

  constructor(
    apiKeyId: string,
    private readonly storage: TokenStorage,
    private readonly keyStore: KeyStore,
  ) {
    this.#keys = storageKeys(apiKeyId);
  }

  async deviceId(): Promise<string | null> {
    const raw = await this.storage.get(this.#keys.device);
    if (raw === null) return null;
    try {
      const parsed = JSON.parse(raw) as { device_id?: unknown };
      return typeof parsed.device_id === 'string' ? parsed.device_id : null;
    } catch {
      return null;
    }
  }

  /** The registered device, or a `no_device_key` error. */
  async require(): Promise<LocalDevice> {
    const deviceId = await this.deviceId();
    const keyPair = deviceId === null ? undefined : await this.keyStore.get(this.#keys.deviceKey);
    if (deviceId === null || !isKeyPair(keyPair)) {
      throw new TesseraClientError(
        ClientErrorCodes.noDeviceKey,
        'this device is not registered as a trusted device; call devices.register() while signed in',
      );
    }
    return { deviceId, keyPair };
  }

  async save(device: LocalDevice): Promise<void> {
    await this.keyStore.set(this.#keys.deviceKey, device.keyPair);
    await this.storage.set(this.#keys.device, JSON.stringify({ device_id: device.deviceId }));
  }

  async forget(): Promise<void> {
    await this.storage.remove(this.#keys.device);
    await this.keyStore.remove(this.#keys.deviceKey);
  }
}
