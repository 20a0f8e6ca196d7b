import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { DbStats } from '../../db/connect.js';
import type { RecordedEvent } from '../audit/events.js';
import type { DeliveryAttempt } from '../otp/delivery/observed.js';
import { requestMetrics } from './request-stats.js';

let processRegistry: Registry | undefined;

/**
 * prom-client's default process and Node.js metrics (`process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`, `nodejs_heap_size_used_bytes`,
 * …), collected once per process whatever the number of apps in it (tests build many).
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** `TRUSTED DEVICE` → `trusted_device`: label values without spaces or capitals. */
export function methodLabel(method: string): string {
  return method.toLowerCase().replace(/[^a-z0-9]+/g, '_');
}

/** What the metrics listen to: the audit log's events and the webhook worker's attempts. */
export interface MetricSources {
  audit: { subscribe(listener: (event: RecordedEvent) => void): void };
  webhooks: { onDelivery(listener: (outcome: 'delivered' | 'retry' | 'failed' | 'deferred') => void): void };
}

/** The storage whose connections and waiters are sampled at each scrape. */
export interface DbSource {
  stats(): DbStats;
  /** SQLite: called after each group commit with the number of operations it answered. */
  onBatchCommit?(listener: (operations: number) => void): void;
}

/** The service's Prometheus metrics, in a registry of its own (several apps may share a process in tests). */
export class Metrics {
  readonly registry = new Registry();
  /** `tessera_http_requests_total` and `tessera_http_request_duration_seconds`. */
  readonly #requests = requestMetrics(this.registry);
  readonly signIns = new Counter({
    name: 'tessera_signins_total',
    help: 'Sign-ins by method (otp, trusted_device, pin, biometric) and outcome',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly refreshes = new Counter({
    name: 'tessera_refreshes_total',
    help: 'Refresh grants that issued tokens',
    registers: [this.registry],
  });
  readonly reuseDetections = new Counter({
    name: 'tessera_refresh_reuse_detections_total',
    help: 'Refresh tokens used twice (the session was revoked)',
    registers: [this.registry],
  });
  readonly ipLimitSyncFailures = new Counter({
    name: 'tessera_ip_limit_sync_failures_total',
    help: 'Syncs of the per-IP counts with the database that failed (limits stay per instance until one succeeds)',
    registers: [this.registry],
  });
  readonly otpSends = new Counter({
    name: 'tessera_otp_sends_total',
    help: 'OTP starts by channel and outcome (sent, delivery_failed, budget_exceeded, country_blocked, …)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'tessera_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: 'tessera_deliveries_total',
    help: 'OTP messages and security notices handed to a provider, by channel, provider, kind and outcome',
    labelNames: ['channel', 'provider', 'kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly deliveriesUnknown = new Counter({
    name: 'tessera_deliveries_unknown_total',
    help: 'Failed hand-overs (also counted as failures) after which it is unknown whether the provider sent the message',
    labelNames: ['channel', 'provider', 'kind'] as const,
    registers: [this.registry],
  });
  readonly deliveryDuration = new Histogram({
    name: 'tessera_delivery_duration_seconds',
    help: 'Time for a provider to take (or refuse) a message, by channel and provider',
    labelNames: ['channel', 'provider'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
    registers: [this.registry],
  });
  readonly dbConnections = new Gauge({
    name: 'tessera_db_connections',
    help: 'PostgreSQL pool connections by state (idle, busy)',
    labelNames: ['state'] as const,
    registers: [this.registry],
    // Registered first of the database series: sampling here refreshes the others before they are read.
    collect: () => this.#sampleDatabase(),
  });
  readonly dbPoolMax = new Gauge({
    name: 'tessera_db_pool_max',
    help: 'Largest number of connections the pool opens (TESSERA_DATABASE_POOL_SIZE; 1 on SQLite)',
    registers: [this.registry],
  });
  readonly dbWaiting = new Gauge({
    name: 'tessera_db_waiting',
    help: 'Queries waiting for a pool connection (PostgreSQL) or transactions waiting for their turn (SQLite)',
    registers: [this.registry],
  });
  readonly sqliteBatch = new Histogram({
    name: 'tessera_sqlite_commit_batch_size',
    help: 'Statements and transactions answered by one SQLite group commit',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });

  readonly clockSkew = new Gauge({
    name: 'tessera_database_clock_skew_seconds',
    help: "This instance's clock minus the database's, read by the last refresh grant (PostgreSQL; positive: ahead)",
    registers: [this.registry],
    collect: () => {
      const seconds = this.#skew?.seconds;
      if (seconds !== undefined) this.clockSkew.set(seconds);
    },
  });

  #database: DbSource | undefined;
  #skew: { readonly seconds: number | undefined } | undefined;

  /** Serves the instance's clock skew against the database (db/clock-skew.ts) at each scrape. */
  watchClockSkew(skew: { readonly seconds: number | undefined }): void {
    this.#skew = skew;
  }

  /** Samples the database's pool at each scrape, and (SQLite) counts group commits. */
  watchDatabase(db: DbSource): void {
    this.#database = db;
    db.onBatchCommit?.((operations) => this.sqliteBatch.observe(operations));
  }

  #sampleDatabase(): void {
    const stats = this.#database?.stats();
    if (!stats) return;
    this.dbPoolMax.set(stats.max);
    this.dbWaiting.set(stats.waiting);
    if (stats.total !== undefined && stats.idle !== undefined) {
      this.dbConnections.set({ state: 'idle' }, stats.idle);
      this.dbConnections.set({ state: 'busy' }, stats.total - stats.idle);
    }
  }

  /** Counts every hand-over to a delivery provider, and times it. */
  countDeliveries(delivery: { onAttempt(listener: (attempt: DeliveryAttempt) => void): void }): void {
    delivery.onAttempt(({ channel, provider, kind, outcome, seconds, failure }) => {
      this.deliveries.inc({ channel, provider, kind, outcome });
      if (failure?.unknown) this.deliveriesUnknown.inc({ channel, provider, kind });
      this.deliveryDuration.observe({ channel, provider }, seconds);
    });
  }

  /** The text `GET /metrics` serves: this app's metrics, then the process's. */
  async text(): Promise<string> {
    return `${await this.registry.metrics()}\n${await processMetrics().metrics()}`;
  }

  /** Counts sign-ins, refreshes and reuse detections from the audit events, and webhook delivery attempts. */
  subscribeTo({ audit, webhooks }: MetricSources): void {
    audit.subscribe((event) => this.#count(event));
    webhooks.onDelivery((outcome) => this.webhookDeliveries.inc({ outcome }));
  }

  /** Counts every OTP start by channel and outcome (SMS pumping shows here first). */
  countOtpSends(otp: { onSend(listener: (channel: string, outcome: string) => void): void }): void {
    otp.onSend((channel, outcome) => this.otpSends.inc({ channel, outcome }));
  }

  #count(event: RecordedEvent): void {
    switch (event.type) {
      case 'signin.succeeded':
        this.signIns.inc({ method: methodLabel(event.data.method), outcome: 'success' });
        break;
      case 'signin.failed':
        this.signIns.inc({ method: methodLabel(event.data.method), outcome: 'failure' });
        break;
      case 'refresh':
        this.refreshes.inc();
        break;
      case 'refresh.reuse_detected':
        this.reuseDetections.inc();
        break;
    }
  }

  /** Counts a finished request and its duration. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.#requests.observe(method, route, status, seconds);
  }
}
