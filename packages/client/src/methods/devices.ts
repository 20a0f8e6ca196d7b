import type { DeviceChallenge, DeviceView } from '@tessera/core';
import { ErrorCodes } from '@tessera/core';
import { generateDeviceKey, publicJwk, type SignaturePurpose, signChallenge } from '../device/device-key.js';
import type { LocalDevice, LocalDeviceStore } from '../device/local-device.js';
import { isTesseraClientError } from '../errors.js';
import {
  type ClientContext,
  callAsUser,
  completeSignIn,
  type SignInOptions,
  type SignInResult,
} from './context.js';

/**
 * A trusted device of the signed-in user.
 *
 * @example
 * ```ts
 * const devices: TrustedDevice[] = await tessera.devices.list();
 * ```
 */
export interface TrustedDevice {
  deviceId: string;
  name: string;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601, or null when never used to sign in. */
  lastUsedAt: string | null;
}

const toDevice = (d: DeviceView): TrustedDevice => ({
  deviceId: d.device_id,
  name: d.name,
  createdAt: d.created_at,
  lastUsedAt: d.last_used_at,
});

/**
 * Trusted devices: this device holds a P-256 key pair it created (the private key cannot be
 * exported, not even by the SDK) and signs the service's challenges with it.
 *
 * @example
 * ```ts
 * // Once, while signed in:
 * await tessera.devices.register('Ada’s laptop');
 * // Later, without a code:
 * await tessera.devices.signIn();
 * ```
 */
export interface DeviceMethods {
  /**
   * Trusts this device for the signed-in user: creates a key pair, registers it, keeps it here.
   * When this device is already registered for this user and still listed, nothing is created:
   * the existing device is returned (no duplicate for one browser). `replace: true` registers a
   * new key all the same; the earlier registration then stays listed until `remove()`d (removing
   * it ends the sessions it started, perhaps this one).
   */
  register(name?: string, options?: { replace?: boolean }): Promise<TrustedDevice>;
  /** This device, when its registration is still listed for the signed-in user; else null. */
  current(): Promise<TrustedDevice | null>;
  /** Signs in with this device's key (`no_device_key` when there is none). */
  signIn(options?: SignInOptions): Promise<SignInResult>;
  /** The signed-in user's trusted devices. */
  list(): Promise<TrustedDevice[]>;
  /** Removes a device (its sessions end); removing this device also forgets its key here. */
  remove(deviceId: string): Promise<void>;
  /** The id this device is registered under, or null. */
  currentId(): Promise<string | null>;
}

/** Starts a device or PIN sign-in; a device the service no longer knows is forgotten here. */
export async function deviceChallenge(
  ctx: ClientContext,
  local: LocalDeviceStore,
  path: string,
): Promise<{
  device: LocalDevice;
  challenge_id: string;
  sign: (purpose: SignaturePurpose) => Promise<string>;
}> {
  const device = await local.require();
  let challenge: DeviceChallenge;
  try {
    challenge = await ctx.transport.call(path, { body: { device_id: device.deviceId } });
  } catch (error) {
    if (isTesseraClientError(error, ErrorCodes.deviceNotFound)) await local.forget();
    throw error;
  }
  return {
    device,
    challenge_id: challenge.challenge_id,
    sign: (purpose) => signChallenge(device.keyPair, purpose, ctx.apiKeyId, challenge),
  };
}

export function deviceMethods(ctx: ClientContext, local: LocalDeviceStore): DeviceMethods {
  const list = async () => {
    const answer = await callAsUser<{ devices: DeviceView[] }>(ctx, '/v1/devices', { method: 'GET' });
    return answer.devices.map(toDevice);
  };
  const current = async () => {
    const id = await local.deviceId();
    return id === null ? null : ((await list()).find((d) => d.deviceId === id) ?? null);
  };
  return {
    async register(name, options = {}) {
      const existing = options.replace ? null : await current();
      if (existing) return existing;
      const challenge = await callAsUser<DeviceChallenge>(ctx, '/v1/devices/register/start');
      const keyPair = await generateDeviceKey();
      const signature = await signChallenge(keyPair, 'device-register', ctx.apiKeyId, challenge);
      const view = await callAsUser<DeviceView>(ctx, '/v1/devices', {
        body: {
          challenge_id: challenge.challenge_id,
          public_key: await publicJwk(keyPair),
          signature,
          ...(name !== undefined && { name }),
        },
      });
      await local.save({ deviceId: view.device_id, keyPair });
      return toDevice(view);
    },
    current,
    async signIn(options = {}) {
      const started = await deviceChallenge(ctx, local, '/v1/auth/device/start');
      const signature = await started.sign('device-signin');
      return completeSignIn(
        ctx,
        '/v1/auth/device/complete',
        { challenge_id: started.challenge_id, signature },
        options,
      );
    },
    list,
    async remove(deviceId) {
      await callAsUser(ctx, `/v1/devices/${encodeURIComponent(deviceId)}`, { method: 'DELETE' });
      if ((await local.deviceId()) === deviceId) await local.forget();
    },
    currentId: () => local.deviceId(),
  };
}
