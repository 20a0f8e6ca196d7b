import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toKnownError } from '../../src/errors.js';
import { AuditLog } from '../../src/modules/audit/audit.service.js';
import {
  AUDIT_EVENT_TYPES,
  type AuditEvent,
  isAuditEventType,
  type RecordedEvent,
} from '../../src/modules/audit/events.js';
import { Metrics } from '../../src/modules/metrics/metrics.js';

/** Accepts exactly what AuditLog.record accepts. */
const event = (e: AuditEvent): AuditEvent => e;

test('a wrong event data shape does not compile (checked by tsc -p tsconfig.test.json)', () => {
  const valid = [
    event({ projectId: 'p', userId: 'u', type: 'signin.succeeded', data: { method: 'OTP' } }),
    event({ projectId: 'p', type: 'signin.failed', data: { method: 'PIN', reason: 'invalid_pin' } }),
    event({ projectId: 'p', type: 'pin.set' }),
    event({ projectId: 'p', type: 'key.rotated', data: { kid: 'k', by: 'automatic' } }),
  ];
  const invalid = [
    // @ts-expect-error a sign-in names its method
    event({ projectId: 'p', type: 'signin.succeeded', data: {} }),
    // @ts-expect-error an unknown method
    event({ projectId: 'p', type: 'signin.succeeded', data: { method: 'PASSWORD' } }),
    // @ts-expect-error an identifier has no place in an event
    event({ projectId: 'p', type: 'otp.sent', data: { channel: 'email', identifier: 'a@example.com' } }),
    // @ts-expect-error an event type that does not exist
    event({ projectId: 'p', type: 'signin.maybe' }),
    // @ts-expect-error a refresh names its session
    event({ projectId: 'p', type: 'refresh' }),
    // @ts-expect-error PIN events carry no data
    event({ projectId: 'p', type: 'pin.locked', data: { attempts: 5 } }),
    // @ts-expect-error who revoked a session is one of two
    event({ projectId: 'p', type: 'session.revoked', data: { session_id: 's', by: 'admin' } }),
  ];
  assert.equal(valid.length + invalid.length, 11);
});

test('every event type is listed once, in the order the webhook API names them', () => {
  assert.deepEqual(AUDIT_EVENT_TYPES, [
    'signin.succeeded',
    'signin.failed',
    'otp.sent',
    'refresh',
    'refresh.grace',
    'refresh.reuse_detected',
    'session.revoked',
    'pin.set',
    'pin.changed',
    'pin.removed',
    'pin.locked',
    'pin.unlocked',
    'device.added',
    'device.removed',
    'passkey.added',
    'passkey.removed',
    'claims.changed',
    'user.created',
    'user.updated',
    'user.deleted',
    'key.rotated',
    'project.secret_rotated',
    'client.created',
    'client.registered',
    'client.updated',
    'client.secret_rotated',
    'client.deleted',
    'consent.granted',
    'consent.revoked',
  ]);
  assert.ok(isAuditEventType('refresh'));
  assert.ok(!isAuditEventType('toString'), 'inherited names are no event types');
  assert.ok(!isAuditEventType('*'));
});

test('metrics count sign-ins by method and outcome, refreshes, reuse and deliveries from the events', async () => {
  const metrics = new Metrics();
  let emit: (event: RecordedEvent) => void = () => {};
  let delivered: (outcome: 'delivered' | 'retry' | 'failed') => void = () => {};
  metrics.subscribeTo({
    audit: { subscribe: (listener) => (emit = listener) },
    webhooks: { onDelivery: (listener) => (delivered = listener) },
  });
  const recorded = { projectId: 'p', id: 'evt', createdAt: 0 };
  emit({ ...recorded, type: 'signin.succeeded', data: { method: 'OTP' } });
  emit({ ...recorded, type: 'signin.succeeded', data: { method: 'OTP' } });
  emit({ ...recorded, type: 'signin.failed', data: { method: 'PIN', reason: 'invalid_pin' } });
  emit({ ...recorded, type: 'refresh', data: { session_id: 's' } });
  emit({ ...recorded, type: 'refresh.reuse_detected', data: { session_id: 's' } });
  emit({ ...recorded, type: 'otp.sent', data: { channel: 'email' } });
  delivered('retry');

  const value = async (name: string, labels: Record<string, string> = {}) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    const sample = metric?.values.find((v) =>
      Object.entries(labels).every(([k, l]) => (v.labels as Record<string, unknown>)[k] === l),
    );
    return sample?.value;
  };
  assert.equal(await value('tessera_signins_total', { method: 'otp', outcome: 'success' }), 2);
  assert.equal(await value('tessera_signins_total', { method: 'pin', outcome: 'failure' }), 1);
  assert.equal(await value('tessera_refreshes_total'), 1);
  assert.equal(await value('tessera_refresh_reuse_detections_total'), 1);
  assert.equal(await value('tessera_webhook_deliveries_total', { outcome: 'retry' }), 1);
});

test('a refresh grant fails at once (503) when the webhook targets cannot be read because the database is away', async () => {
  const db = { dialect: 'postgres' } as unknown as ConstructorParameters<typeof AuditLog>[0];
  const failing = (error: Error) => ({
    targets: () => Promise.reject(error),
    queue: async () => {},
  });
  const log = new AuditLog(db, () => {});
  // The database away: the caller fails now instead of waiting for it again on its slow path.
  const away = new Error('Connection terminated unexpectedly');
  log.setOutbox(failing(away));
  const refused = await log.inlineStamp('p', 'refresh').then(
    () => undefined,
    (error: unknown) => error,
  );
  assert.equal(refused, away);
  assert.equal(toKnownError(refused)?.statusCode, 503);
  // Anything else: the event goes through `record`, which reads the targets again and logs.
  log.setOutbox(failing(new TypeError('a bug')));
  assert.equal(await log.inlineStamp('p', 'refresh'), undefined);
});
