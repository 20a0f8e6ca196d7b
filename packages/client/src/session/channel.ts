/**
 * What the SDK needs of a `BroadcastChannel`: tabs of one origin tell each other about sign-in,
 * renewal and sign-out (no token is ever sent, only a notice to re-read storage), and the
 * fallback lock talks over it too.
 *
 * @example
 * ```ts
 * import { createTesseraClient, type ChannelLike } from '@tessera/client';
 *
 * const channel: ChannelLike = new BroadcastChannel('my-app-auth');
 * const tessera = createTesseraClient({ issuer, apiKeyId, channel });
 * ```
 */
export interface ChannelLike {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
  removeEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
}

/** Posts, ignoring a closed channel (a closing tab must not fail its own sign-out). */
export function post(channel: ChannelLike, message: unknown): boolean {
  try {
    channel.postMessage(message);
    return true;
  } catch {
    return false;
  }
}

/** A random id for this instance (tab), used to ignore one's own messages and to break ties. */
export function instanceId(): string {
  // Not a secret: without a crypto polyfill (bare React Native) Math.random does the job.
  const bytes = new Uint8Array(12);
  if (typeof globalThis.crypto?.getRandomValues === 'function') globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
