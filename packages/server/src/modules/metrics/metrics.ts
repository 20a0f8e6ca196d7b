import { Counter, Histogram, Registry } from 'prom-client';
import type { RecordedEvent } from '../audit/events.js';

/** What the metrics listen to: the audit log's events and the webhook worker's attempts. */
export interface MetricSources {
  audit: { subscribe(listener: (event: RecordedEvent) => void): void };
  webhooks: { onDelivery(listener: (outcome: 'delivered' | 'retry' | 'failed' | 'deferred') => void): void };
}

interface RequestSeries {
  count: { inc(): void };
  latency: { observe(seconds: number): void };
}

/** The service's Prometheus metrics, in a registry of its own (several apps may share a process in tests). */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tessera_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'tessera_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly signIns = new Counter({
    name: 'tessera_signins_total',
    help: 'Sign-ins by method and outcome',
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
        this.signIns.inc({ method: event.data.method, outcome: 'success' });
        break;
      case 'signin.failed':
        this.signIns.inc({ method: event.data.method, outcome: 'failure' });
        break;
      case 'refresh':
        this.refreshes.inc();
        break;
      case 'refresh.reuse_detected':
        this.reuseDetections.inc();
        break;
    }
  }

  /** The request series by method, route and status, bound once (prom-client hashes labels per call). */
  #series = new Map<string, RequestSeries>();

  /** Counts a finished request and its duration. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.#series.get(key);
    if (!series) {
      series = {
        count: this.requests.labels(method, route, String(status)),
        latency: this.latency.labels(method, route),
      };
      // Routes are the route table's patterns, so this stays small; the bound is a backstop.
      if (this.#series.size >= 5000) this.#series.clear();
      this.#series.set(key, series);
    }
    series.count.inc();
    series.latency.observe(seconds);
  }
}
