import type { AuthMethod } from '@tessera/core';

/** How a user signed in (the bundle's `auth_method`). */
export type SignInMethod = AuthMethod;

/** An event that carries no data (stored and sent as `{}`). */
type NoData = Record<string, never>;

/**
 * Every security event and the data it carries. The data is what GET /v1/audit answers and what
 * webhooks send, so it holds no secret and no identifier the integrator does not already know.
 * Adding an event here makes it recordable, subscribable by webhooks and listed in the
 * endpoint's error text; a change to an existing one changes the wire format.
 */
export interface AuditEvents {
  'signin.succeeded': { method: SignInMethod; device_id?: string; passkey_id?: string };
  /** `reason` is the method's own (e.g. invalid_code, invalid_pin, pin_locked, invalid_signature). */
  'signin.failed': { method: SignInMethod; reason: string; device_id?: string };
  'otp.sent': { channel: 'email' | 'sms' };
  /** A refresh grant issued tokens. */
  refresh: { session_id: string };
  /**
   * A rotated refresh token came back from the client that rotated it, inside the grace window,
   * while its successor was unused: that successor was returned (two tabs, or a lost answer).
   */
  'refresh.grace': { session_id: string };
  /**
   * A rotated refresh token came back after the grace window, from another client, or after its
   * successor was used: the session was revoked.
   */
  'refresh.reuse_detected': { session_id: string };
  /** A sign-out (RFC 7009, `by: user`) or the integrator's revocation. */
  'session.revoked': { session_id: string; by: 'user' | 'integrator' };
  'pin.set': NoData;
  'pin.changed': NoData;
  'pin.removed': NoData;
  'pin.locked': NoData;
  'pin.unlocked': { by: 'OTP' | 'integrator' };
  'device.added': { device_id: string };
  'device.removed': { device_id: string; sessions_revoked: number };
  'passkey.added': { passkey_id: string };
  /** `sessions_revoked`: the sessions the passkey had started, ended with it. */
  'passkey.removed': { passkey_id: string; sessions_revoked: number };
  /** `names`: the claim names now set, comma-separated (empty when all were removed). */
  'claims.changed': { names: string };
  /**
   * A sign-in created the user (a first OTP sign-in): recorded once per user, before that sign-in's
   * `signin.succeeded`, so integrators can tell sign-ups from sign-ins.
   */
  'user.created': { method: SignInMethod; identifier_type: 'email' | 'phone' };
  'user.updated': { field: 'client_user_id' };
  'user.deleted': { sessions_revoked: number };
  /** A signing-key rotation, recorded for every project. */
  'key.rotated': { kid: string; by: 'cli' | 'automatic' | 'operator' | 'console' };
  'project.secret_rotated': { by: 'cli' | 'operator' | 'console' };
}

export type AuditEventType = keyof AuditEvents;

/**
 * Every event type, in the order the webhook API lists them. The record type makes the compiler
 * check that each type is here exactly once.
 */
const TYPES: Record<AuditEventType, true> = {
  'signin.succeeded': true,
  'signin.failed': true,
  'otp.sent': true,
  refresh: true,
  'refresh.grace': true,
  'refresh.reuse_detected': true,
  'session.revoked': true,
  'pin.set': true,
  'pin.changed': true,
  'pin.removed': true,
  'pin.locked': true,
  'pin.unlocked': true,
  'device.added': true,
  'device.removed': true,
  'passkey.added': true,
  'passkey.removed': true,
  'claims.changed': true,
  'user.created': true,
  'user.updated': true,
  'user.deleted': true,
  'key.rotated': true,
  'project.secret_rotated': true,
};
export const AUDIT_EVENT_TYPES = Object.keys(TYPES) as readonly AuditEventType[];

export function isAuditEventType(type: string): type is AuditEventType {
  return Object.hasOwn(TYPES, type);
}

/** Events without data may leave it out. */
type DataOf<T extends AuditEventType> = AuditEvents[T] extends NoData
  ? { data?: AuditEvents[T] }
  : { data: AuditEvents[T] };

/** An event to record: one member per type, so a wrong data shape fails to compile. */
export type AuditEvent<T extends AuditEventType = AuditEventType> = {
  [K in T]: {
    projectId: string;
    userId?: string | null;
    type: K;
    ip?: string | null;
  } & DataOf<K>;
}[T];

/** An audit event as recorded: its id and time added. */
export type RecordedEvent<T extends AuditEventType = AuditEventType> = AuditEvent<T> & {
  id: string;
  createdAt: number;
};

/** An event as stored and read back (GET /v1/audit): its data parsed, of any type ever stored. */
export interface StoredEvent {
  id: string;
  projectId: string;
  userId: string | null;
  type: string;
  data: Record<string, unknown>;
  ip: string | null;
  createdAt: number;
}
